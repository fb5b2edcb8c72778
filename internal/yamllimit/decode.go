package yamllimit

import (
	"fmt"

	"github.com/goccy/go-yaml"
)

// Decode reads YAML from outside into v strictly (an unknown key is an
// error): Check first, then goccy/go-yaml. The library's own errors come
// back as they are, for the caller to word with yaml.FormatError. go-yaml
// v1.19.2 panics on some malformed input ("stages:\n  - [\n" in an
// experiment, "steps: ! " in a workflow: a tag with nothing after it
// where a list goes); that comes back as an error too.
func Decode(data []byte, v any) error {
	if err := Check(data); err != nil {
		return err
	}
	return Guard(func() error { return yaml.UnmarshalWithOptions(data, v, yaml.DisallowUnknownField()) })
}

// Guard runs decode, a call of the YAML library, and turns a panic of the
// library into an error (see Decode).
func Guard(decode func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed YAML (the parser failed: %v): check brackets, quotes, tags and indentation", r)
		}
	}()
	return decode()
}
