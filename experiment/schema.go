package experiment

import (
	_ "embed"
	"fmt"
	"os"
)

//go:embed schema.json
var schema []byte

// Schema returns the JSON Schema of experiment files, for editors (e.g. the
// YAML language server's `# yaml-language-server: $schema=...` comment).
func Schema() []byte { return append([]byte(nil), schema...) }

//go:embed starter.yaml
var starter []byte

// Starter returns a commented experiment file to begin from (spate init).
func Starter() []byte { return append([]byte(nil), starter...) }

// WriteStarter writes the starter file to path; an existing file is an
// error that says so unless overwrite.
func WriteStarter(path string, overwrite bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if overwrite {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	fh, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		if os.IsExist(err) {
			return fmt.Errorf("%s exists: pass --force to overwrite it", path)
		}
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := fh.Write(Starter()); err != nil {
		fh.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
