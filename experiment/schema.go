package experiment

import _ "embed"

//go:embed schema.json
var schema []byte

// Schema returns the JSON Schema of experiment files, for editors (e.g. the
// YAML language server's `# yaml-language-server: $schema=...` comment).
func Schema() []byte { return append([]byte(nil), schema...) }

//go:embed starter.yaml
var starter []byte

// Starter returns a commented experiment file to begin from (spate init).
func Starter() []byte { return append([]byte(nil), starter...) }
