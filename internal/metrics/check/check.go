// Package check tests answers: the checks a workload attaches to its
// requests (regex, contains, JSON schema, reference match, ROUGE-L, tool call
// present, length bounds), compiled once and evaluated per answer. A request
// whose answer passes all its checks is a semantic task done (sTPS).
//
// Stage: metrics (answer checks, sTPS).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/spate-dev/spate/experiment"
)

// Kinds lists the check kinds, for help and errors.
const Kinds = "regex, contains, not_contains, equals, json, json_schema, rouge_l, tool_call, min_length, max_length"

// Answer is what a check looks at.
type Answer struct {
	Text      []byte // answer text (and tool call arguments)
	ToolCalls int    // tool calls in the response
}

// Check is a compiled check.
type Check struct {
	name string
	eval func(Answer) bool
}

// Name is the check's name in the result.
func (c *Check) Name() string { return c.name }

// Pass reports whether a passes the check.
func (c *Check) Pass(a Answer) bool { return c.eval(a) }

// Set is the compiled checks of a request; it is shared by every request
// built from the same spec and safe for concurrent use.
type Set struct {
	Checks []*Check
}

// Compile compiles specs; an error names the check by its position and kind.
func Compile(specs []experiment.Check) (*Set, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	s := &Set{}
	for i, sp := range specs {
		c, err := compile(sp)
		if err != nil {
			return nil, fmt.Errorf("check %d (%s): %w", i+1, sp.Kind, err)
		}
		s.Checks = append(s.Checks, c)
	}
	return s, nil
}

func compile(sp experiment.Check) (*Check, error) {
	c := &Check{name: sp.Name}
	if c.name == "" {
		c.name = sp.Kind
	}
	switch sp.Kind {
	case "regex":
		re, err := regexp.Compile(sp.Value)
		if err != nil {
			return nil, fmt.Errorf("value is not a regular expression: %w", err)
		}
		c.eval = func(a Answer) bool { return re.Match(a.Text) }
	case "contains", "not_contains":
		if sp.Value == "" {
			return nil, fmt.Errorf("needs a value: the text to look for")
		}
		want := strings.ToLower(sp.Value)
		neg := sp.Kind == "not_contains"
		c.eval = func(a Answer) bool { return strings.Contains(strings.ToLower(string(a.Text)), want) != neg }
	case "equals":
		want := normalise(sp.Value)
		c.eval = func(a Answer) bool { return normalise(string(a.Text)) == want }
	case "json":
		c.eval = func(a Answer) bool { return json.Valid(bytes.TrimSpace(stripFence(a.Text))) }
	case "json_schema":
		sch, err := compileSchema(sp.Value)
		if err != nil {
			return nil, err
		}
		c.eval = func(a Answer) bool {
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(bytes.TrimSpace(stripFence(a.Text))))
			return err == nil && sch.Validate(v) == nil
		}
	case "rouge_l":
		if sp.Value == "" {
			return nil, fmt.Errorf("needs a value: the reference answer")
		}
		if sp.Min <= 0 || sp.Min > 1 {
			return nil, fmt.Errorf("needs min in (0, 1]: the lowest ROUGE-L F1 that passes")
		}
		ref := Tokens(sp.Value)
		c.eval = func(a Answer) bool { return RougeL(ref, Tokens(string(a.Text))) >= sp.Min }
	case "tool_call":
		// min, when given, is the least number of calls (tool_calls >= 2).
		n := max(1, int(sp.Min))
		c.eval = func(a Answer) bool { return a.ToolCalls >= n }
	case "min_length", "max_length":
		if sp.Min < 0 {
			return nil, fmt.Errorf("needs min ≥ 0: the length bound in characters")
		}
		n := int(sp.Min)
		if sp.Kind == "min_length" {
			c.eval = func(a Answer) bool { return len([]rune(string(a.Text))) >= n }
		} else {
			c.eval = func(a Answer) bool { return len([]rune(string(a.Text))) <= n }
		}
	default:
		return nil, fmt.Errorf("unknown kind %q: use one of %s", sp.Kind, Kinds)
	}
	return c, nil
}

func compileSchema(src string) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("value is not a JSON schema: %w", err)
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("check.json", doc); err != nil {
		return nil, fmt.Errorf("value is not a JSON schema: %w", err)
	}
	sch, err := comp.Compile("check.json")
	if err != nil {
		return nil, fmt.Errorf("value is not a valid JSON schema: %w", err)
	}
	return sch, nil
}

// stripFence removes a ```json … ``` fence around an answer, as models
// often add one.
func stripFence(b []byte) []byte {
	t := bytes.TrimSpace(b)
	if !bytes.HasPrefix(t, []byte("```")) {
		return b
	}
	t = t[3:]
	if i := bytes.IndexByte(t, '\n'); i >= 0 {
		t = t[i+1:]
	}
	return bytes.TrimSuffix(bytes.TrimSpace(t), []byte("```"))
}

// normalise lower-cases s, collapses white space and trims punctuation at
// the ends, for equals.
func normalise(s string) string {
	return strings.Trim(strings.Join(strings.Fields(strings.ToLower(s)), " "), ".!?,;: ")
}

// Eval runs every check of s on a and returns the outcomes appended to out.
func (s *Set) Eval(a Answer, out []Outcome) []Outcome {
	if s == nil {
		return out
	}
	for _, c := range s.Checks {
		out = append(out, Outcome{Name: c.name, Pass: c.eval(a)})
	}
	return out
}

// Outcome is how one check went.
type Outcome struct {
	Name string
	Pass bool
}
