package doctor

import (
	"errors"
	"fmt"
	"io"
)

// Options are the flags of spate doctor: the Config they fill, the
// --header lines as given and the --format of the report.
type Options struct {
	Config
	// HeaderLines are the --header values, 'Name: value' each.
	HeaderLines []string
	// Format is --format: text (a table) or json.
	Format string
}

// Prepare checks the options and returns the Config to run: the API key
// from getenv("OPENAI_API_KEY") when none is given, the header lines
// parsed. Its errors name the flag: the command's usage errors.
func (o Options) Prepare(getenv func(string) string) (Config, error) {
	cfg := o.Config
	if cfg.Target == "" {
		return cfg, errors.New("--target is required: the API's base URL, e.g. http://127.0.0.1:8000/v1")
	}
	if o.Format != "text" && o.Format != "json" {
		return cfg, fmt.Errorf("--format %q: want text or json", o.Format)
	}
	if cfg.APIKey == "" {
		cfg.APIKey = getenv("OPENAI_API_KEY")
	}
	var err error
	cfg.Headers, err = ParseHeaders(o.HeaderLines)
	return cfg, err
}

// Write writes the report r in the options' format: WriteJSON for json,
// else WriteText.
func (o Options) Write(w io.Writer, r *Report) error {
	if o.Format == "json" {
		return WriteJSON(w, r)
	}
	return WriteText(w, r)
}
