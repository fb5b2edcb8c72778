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
// A template is one body: {{define}}, {{block}} and {{template}} are
// refused, since a template that calls itself twice does work that
// doubles with each call and writes nothing. Filling one is bounded, as
// text/template bounds nothing: Parse rewrites the template so that each
// {{range}} counts what it ranges over (the integer, or the length)
// against MaxIterations for the whole fill before it starts, and so that
// the functions that make text (printf, print, println, html, js,
// urlquery, json) count what they make against MaxMade, output or not;
// the output stops at MaxOutput. With no other loops and no calls, that
// bounds the work of a fill. A loop over 100 billion ({{range
// 100000000000}}) grew its output by 400 MB/s to a fatal out of memory,
// and did not stop on Ctrl-C.
//
// Stage: workload.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"text/template"
	"text/template/parse"
)

// Bounds of one filled template (see the package comment): far above a
// real body or prompt (the lineSize limit bounds a dataset's values at 64
// MiB), far below what takes the machine.
const (
	// MaxOutput bounds the bytes of a filled template.
	MaxOutput = 64 << 20
	// MaxIterations bounds the turns of all the {{range}} loops of one
	// fill together.
	MaxIterations = 1_000_000
	// MaxMade bounds the bytes the text-making functions of one fill
	// make together.
	MaxMade = 2 * MaxOutput
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
	rangeFunc: countRange,
}

// rangeFunc is the function Parse puts at the end of each {{range}}'s
// pipeline: {{range X}} runs as {{range X | spateRange $}}.
const rangeFunc = "spateRange"

// made are the functions that make text, each with the function Parse
// puts in its place, which takes the data first to count what it makes:
// {{printf "%d" 1}} runs as {{spate_printf $ "%d" 1}}.
var made = map[string]string{}

func init() {
	for name, f := range map[string]func(...any) (string, error){
		"printf": func(a ...any) (string, error) {
			format, ok := a[0].(string)
			if !ok {
				return "", fmt.Errorf("printf: the format is a %T, not a string", a[0])
			}
			return fmt.Sprintf(format, a[1:]...), nil
		},
		"print":    func(a ...any) (string, error) { return fmt.Sprint(a...), nil },
		"println":  func(a ...any) (string, error) { return fmt.Sprintln(a...), nil },
		"html":     func(a ...any) (string, error) { return template.HTMLEscaper(a...), nil },
		"js":       func(a ...any) (string, error) { return template.JSEscaper(a...), nil },
		"urlquery": func(a ...any) (string, error) { return template.URLQueryEscaper(a...), nil },
		"json": func(a ...any) (string, error) {
			if len(a) != 1 {
				return "", fmt.Errorf("json: wants 1 argument, got %d", len(a))
			}
			return funcs["json"].(func(any) (string, error))(a[0])
		},
	} {
		counted := "spate_" + name
		made[name] = counted
		funcs[counted] = func(d *Data, a ...any) (string, error) {
			if name == "printf" && len(a) == 0 {
				return "", errors.New("printf: wants a format")
			}
			s, err := f(a...)
			if err != nil {
				return "", err
			}
			if d.made += uint64(len(s)); d.made > MaxMade {
				return "", errTooMuch
			}
			return s, nil
		}
	}
}

// errTooLarge is the error of a fill past MaxOutput, errTooLong of one
// past MaxIterations, errTooMuch of one past MaxMade.
var (
	errTooLarge = errors.New("too large")
	errTooLong  = errors.New("too long")
	errTooMuch  = errors.New("too much")
)

// Has reports whether text contains a template action.
func Has(text string) bool { return strings.Contains(text, "{{") }

// Parse parses a template; name is used in errors (a file and line, or a
// flag).
func Parse(name, text string) (*Template, error) {
	t, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(text)
	if err == nil && len(t.Templates()) > 1 {
		err = fmt.Errorf("template: %s: {{define}} and {{block}} are not supported: a payload template is one body", name)
	}
	if err == nil {
		err = bound(t.Tree, t.Root)
	}
	if err != nil {
		return nil, fmt.Errorf("template %w (see the payload templates section of docs/workloads.md)", err)
	}
	return &Template{t: t}, nil
}

// bound refuses {{template}} under n, makes each {{range}} count its
// turns and each text-making function what it makes (see the package
// comment).
func bound(tree *parse.Tree, n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := bound(tree, c); err != nil {
				return err
			}
		}
	case *parse.TemplateNode:
		loc, _ := tree.ErrorContext(n)
		return fmt.Errorf("template: %s: {{template}} is not supported: a payload template is one body", loc)
	case *parse.ActionNode:
		counted(tree, n.Pipe)
	case *parse.IfNode:
		return branch(tree, &n.BranchNode)
	case *parse.WithNode:
		return branch(tree, &n.BranchNode)
	case *parse.RangeNode:
		counted(tree, n.Pipe)
		n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos, Args: []parse.Node{
			parse.NewIdentifier(rangeFunc).SetTree(tree).SetPos(n.Pos),
			dollar(n.Pos),
		}})
		return branch(tree, &n.BranchNode)
	}
	return nil
}

func branch(tree *parse.Tree, b *parse.BranchNode) error {
	counted(tree, b.Pipe)
	if err := bound(tree, b.List); err != nil {
		return err
	}
	return bound(tree, b.ElseList)
}

// counted puts the counting functions of made in place of the ones in p
// (and in the pipelines within it).
func counted(tree *parse.Tree, p *parse.PipeNode) {
	if p == nil {
		return
	}
	for _, c := range p.Cmds {
		for _, a := range c.Args {
			if sub, ok := a.(*parse.PipeNode); ok {
				counted(tree, sub)
			}
		}
		if id, ok := c.Args[0].(*parse.IdentifierNode); ok && made[id.Ident] != "" {
			c.Args = append([]parse.Node{parse.NewIdentifier(made[id.Ident]).SetTree(tree).SetPos(id.Pos), dollar(id.Pos)}, c.Args[1:]...)
		}
	}
}

// dollar is the node of $, the data of the fill.
func dollar(pos parse.Pos) parse.Node {
	return &parse.VariableNode{NodeType: parse.NodeVariable, Pos: pos, Ident: []string{"$"}}
}

// countRange counts the turns of a {{range}} over v against d's budget,
// and returns v for the range.
func countRange(d *Data, v any) (any, error) {
	var n uint64
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n = uint64(max(r.Int(), 0))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n = r.Uint()
	case reflect.Array, reflect.Slice, reflect.Map, reflect.String, reflect.Chan:
		n = uint64(r.Len())
	}
	if n > MaxIterations-d.turns {
		return nil, errTooLong
	}
	d.turns += n
	return v, nil
}

// Data is what a template sees for one request.
type Data struct {
	Seq   uint64
	Vars  map[string]any
	rng   *rand.Rand
	turns uint64 // of the {{range}} loops of the fill under way
	made  uint64 // bytes made by its text-making functions
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

// Execute fills the template for d, bounded by MaxOutput and
// MaxIterations. One d is for one fill at a time.
func (t *Template) Execute(d *Data) (string, error) {
	var b bytes.Buffer
	d.turns, d.made = 0, 0
	if err := t.t.Execute(&capped{b: &b, left: MaxOutput}, d); err != nil {
		switch {
		case errors.Is(err, errTooLarge):
			return "", fmt.Errorf("filling template %s: the output is over %d MiB, the limit of one filled template: loop less or put less in it", t.t.Name(), MaxOutput>>20)
		case errors.Is(err, errTooLong):
			return "", fmt.Errorf("filling template %s: its {{range}} loops would run more than %d times, the limit of one filled template: range over fewer", t.t.Name(), MaxIterations)
		case errors.Is(err, errTooMuch):
			return "", fmt.Errorf("filling template %s: its functions (printf, json, ...) made more than %d MiB of text, the limit of one filled template: loop less or make less", t.t.Name(), MaxMade>>20)
		}
		return "", fmt.Errorf("filling template: %w", err)
	}
	return b.String(), nil
}

// capped writes to b until left bytes are written, then fails with
// errTooLarge (which ends the fill).
type capped struct {
	b    *bytes.Buffer
	left int
}

func (c *capped) Write(p []byte) (int, error) {
	if len(p) > c.left {
		return 0, errTooLarge
	}
	c.left -= len(p)
	return c.b.Write(p)
}

// String prints the data the same way every run, so a template that
// prints it whole ({{.}} or {{$}}) stays reproducible (no pointers).
func (d *Data) String() string { return fmt.Sprintf("{Seq:%d Vars:%v}", d.Seq, d.Vars) }
