// Package yamlkeys lists every key of a YAML file that the Go type it is
// read into has no field for, each with its line, column and the known
// key of that same mapping it is nearest, and every top-level section's
// value error. go-yaml's decoding stops at the first error; `spate
// validate` shows them all at once, and its "did you mean" names a key
// that is valid where the typo is.
//
// Stage: experiment (the files it reads). The data flow: experiment →
// workload → schedule → engine → client → record → metrics → verdict →
// outputs (docs/design.md).
package yamlkeys

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/spate-dev/spate/internal/suggest"
	"github.com/spate-dev/spate/internal/yamllimit"
)

// Unknown is a key the type has no field for.
type Unknown struct {
	// Key is the key as written; Line and Column are 1-based.
	Key          string
	Line, Column int
	// Known are the keys that mapping may hold; Nearest the one of them
	// the key is nearest ("" when none is near).
	Known   []string
	Nearest string
}

// Find lists the unknown keys of data read into a value of type t, in the
// order they appear. YAML that does not parse, or that yamllimit refuses,
// lists none (the decoder says why). Keys under a type
// that decodes itself (a YAML, text or JSON unmarshaler), a map's keys
// and anything under an interface are not checked.
func Find(data []byte, t reflect.Type) []Unknown {
	if yamllimit.Check(data) != nil {
		return nil
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil
	}
	var out []Unknown
	for _, d := range f.Docs {
		if d != nil {
			walk(d.Body, t, &out)
		}
	}
	return out
}

var selfDecoding = []reflect.Type{
	reflect.TypeFor[yaml.BytesUnmarshaler](),
	reflect.TypeFor[yaml.BytesUnmarshalerContext](),
	reflect.TypeFor[yaml.InterfaceUnmarshaler](),
	reflect.TypeFor[yaml.InterfaceUnmarshalerContext](),
	reflect.TypeFor[yaml.NodeUnmarshaler](),
	reflect.TypeFor[yaml.NodeUnmarshalerContext](),
	reflect.TypeFor[encoding.TextUnmarshaler](),
	reflect.TypeFor[json.Unmarshaler](),
}

// decodesItself reports whether t (or *t) reads YAML its own way.
func decodesItself(t reflect.Type) bool {
	for _, i := range selfDecoding {
		if t.Implements(i) || reflect.PointerTo(t).Implements(i) {
			return true
		}
	}
	return false
}

func walk(n ast.Node, t reflect.Type, out *[]Unknown) {
	if n == nil || t == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if decodesItself(t) {
		return
	}
	switch v := n.(type) {
	case *ast.TagNode:
		walk(v.Value, t, out)
		return
	case *ast.AnchorNode:
		walk(v.Value, t, out)
		return
	case *ast.CommentGroupNode:
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		fields := map[string]reflect.Type{}
		var known []string
		collect(t, fields, &known)
		for _, mv := range pairs(n) {
			if mv.Key == nil {
				continue
			}
			key := mv.Key.GetToken()
			if key == nil {
				continue
			}
			if key.Value == "<<" { // a merge key: its values are checked where they are written
				continue
			}
			ft, ok := fields[key.Value]
			if !ok {
				*out = append(*out, Unknown{Key: key.Value, Line: key.Position.Line, Column: key.Position.Column, Known: known, Nearest: suggest.Closest(key.Value, known)})
				continue
			}
			walk(mv.Value, ft, out)
		}
	case reflect.Map:
		for _, mv := range pairs(n) {
			walk(mv.Value, t.Elem(), out)
		}
	case reflect.Slice, reflect.Array:
		if s, ok := n.(*ast.SequenceNode); ok {
			for _, e := range s.Values {
				walk(e, t.Elem(), out)
			}
		}
	}
}

// pairs are the key-value pairs of a mapping node (block or flow, or a
// mapping of one pair).
func pairs(n ast.Node) []*ast.MappingValueNode {
	switch v := n.(type) {
	case *ast.MappingNode:
		return v.Values
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{v}
	}
	return nil
}

// collect maps the YAML keys of struct t to their fields' types, as
// go-yaml names them: the yaml tag, else the json tag, else the field's
// name in lower case; inline and embedded structs lend theirs.
func collect(t reflect.Type, fields map[string]reflect.Type, known *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "" {
			tag = f.Tag.Get("json")
		}
		opts := strings.Split(tag, ",")
		name := opts[0]
		if name == "-" {
			continue
		}
		inline := f.Anonymous && name == ""
		for _, o := range opts[1:] {
			inline = inline || o == "inline"
		}
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collect(ft, fields, known)
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		if _, dup := fields[name]; !dup {
			*known = append(*known, name)
		}
		fields[name] = f.Type
	}
}

// SectionErrors decodes each top-level section of data (a key of struct
// type t that t has) on its own, unknown keys let through, and returns the
// error of each section that does not decode, in the file's order: what a
// decoder that stops at the first error says one at a time. Sections are
// decoded apart, so an alias to an anchor in another section does not
// resolve; call it once the whole file is known not to decode.
func SectionErrors(data []byte, t reflect.Type) []error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct || yamllimit.Check(data) != nil {
		return nil
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil
	}
	fields := map[string]reflect.Type{}
	var known []string
	collect(t, fields, &known)
	var errs []error
	for _, d := range f.Docs {
		if d == nil {
			continue
		}
		body := d.Body
		for {
			switch v := body.(type) {
			case *ast.TagNode:
				body = v.Value
				continue
			case *ast.AnchorNode:
				body = v.Value
				continue
			}
			break
		}
		for _, mv := range pairs(body) {
			if mv.Key == nil || mv.Key.GetToken() == nil {
				continue
			}
			ft, ok := fields[mv.Key.GetToken().Value]
			if !ok || mv.Value == nil {
				continue
			}
			if err := decodeNode(mv.Value, reflect.New(ft).Interface()); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// decodeNode decodes n into v, a panic of the library an error.
func decodeNode(n ast.Node, v any) error {
	return yamllimit.Guard(func() error { return yaml.NodeToValue(n, v) })
}
