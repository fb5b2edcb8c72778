// Package payload fills request templates: bodies and prompts with
// placeholders in Go's text/template syntax, filled per request from the
// request's index, its dataset row and a random source seeded per request
// (so the same seed sends the same bytes).
//
// In a template:
//
//	{{.Seq}}                 the request's index (0, 1, 2, ...)
//	{{.Vars.city}}           a value from the dataset line's "vars" object
//	{{.RandInt 1 100}}       a random integer in [1, 100]
//	{{.RandFloat 0 1}}       a random number in [0, 1)
//	{{.Choice "a" "b" "c"}}  one of the arguments, at random
//	{{.UUID}}                a random (seeded) UUID
//	{{json .Vars.q}}         a value as JSON (quoted and escaped)
//
// Stage: workload.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package payload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"text/template"
)

// Template is a parsed payload template. It is safe for concurrent use.
type Template struct {
	t *template.Template
}

var funcs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}

// Has reports whether text contains a template action.
func Has(text string) bool { return strings.Contains(text, "{{") }

// Parse parses a template; name is used in errors (a file and line, or a
// flag).
func Parse(name, text string) (*Template, error) {
	t, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("template %w (see the payload templates section of the README)", err)
	}
	return &Template{t: t}, nil
}

// Data is what a template sees for one request.
type Data struct {
	Seq  uint64
	Vars map[string]any
	rng  *rand.Rand
}

// NewData returns the data of request seq, with a random source fixed by
// seed and seq.
func NewData(seq uint64, vars map[string]any, seed uint64) *Data {
	return &Data{Seq: seq, Vars: vars, rng: rand.New(rand.NewPCG(seed^0x7a3d5e1f, seq))}
}

// RandInt returns a random integer in [lo, hi].
func (d *Data) RandInt(lo, hi int) (int, error) {
	if hi < lo {
		return 0, fmt.Errorf("RandInt %d %d: the first bound must not exceed the second", lo, hi)
	}
	return lo + d.rng.IntN(hi-lo+1), nil
}

// RandFloat returns a random number in [lo, hi).
func (d *Data) RandFloat(lo, hi float64) float64 { return lo + d.rng.Float64()*(hi-lo) }

// Choice returns one of items at random.
func (d *Data) Choice(items ...any) (any, error) {
	if len(items) == 0 {
		return nil, fmt.Errorf("Choice needs at least one item")
	}
	return items[d.rng.IntN(len(items))], nil
}

// UUID returns a version-4 UUID drawn from the request's random source.
func (d *Data) UUID() string {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := d.rng.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Execute fills the template for d.
func (t *Template) Execute(d *Data) (string, error) {
	var b bytes.Buffer
	if err := t.t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("filling template: %w", err)
	}
	return b.String(), nil
}

// String prints the data the same way every run, so a template that
// prints it whole ({{.}} or {{$}}) stays reproducible (no pointers).
func (d *Data) String() string { return fmt.Sprintf("{Seq:%d Vars:%v}", d.Seq, d.Vars) }
