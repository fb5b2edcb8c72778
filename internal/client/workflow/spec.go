// Package workflow runs multi-step requests — embed → search → rerank →
// generate → tool call — defined declaratively: each step is an HTTP
// request whose URL and body are payload templates filled with the
// request's variables and the values extracted from earlier steps'
// responses. A Workflow is an engine.Client, so the engine drives it like
// any target; every step's timing goes into record.Record.Steps and a
// failing step fails the workflow with its name.
//
// Stage: client (a multi-step request as the unit sent), with per-step
// figures for metrics.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package workflow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/spate-dev/spate/internal/capread"
	"github.com/spate-dev/spate/internal/workload/payload"
	"github.com/spate-dev/spate/internal/yamllimit"
)

// Spec is a workflow definition, as written in YAML:
//
//	name: rag
//	steps:
//	  - name: embed
//	    url: "{{.Vars.target}}/embeddings"
//	    body: '{"model": "m", "input": {{json .Vars.prompt}}}'
//	    extract: {embedding: data.0.embedding}
//	  - name: search
//	    url: http://127.0.0.1:6333/collections/docs/points/search
//	    body: '{"vector": {{json .Vars.embed.embedding}}, "limit": 3}'
//	    extract: {passages: result}
//	  - name: generate
//	    url: "{{.Vars.target}}/chat/completions"
//	    body: '{"model": "m", "messages": [{"role": "user", "content": {{json .Vars.prompt}}}]}'
//	    extract: {answer: choices.0.message.content}
type Spec struct {
	// Name names the workflow in results.
	Name string `yaml:"name" json:"name"`
	// Steps run in order; the first that fails ends the workflow.
	Steps []StepSpec `yaml:"steps" json:"steps"`
}

// StepSpec is one step: an HTTP request and what to keep of its answer.
type StepSpec struct {
	// Name names the step in results and in templates of later steps
	// ({{.Vars.NAME.VAR}}); letters, digits and _ only.
	Name string `yaml:"name" json:"name"`
	// Method is the HTTP method (default POST with a body, GET without).
	Method string `yaml:"method,omitempty" json:"method,omitempty"`
	// URL and Body are payload templates (see package payload).
	URL  string `yaml:"url" json:"url"`
	Body string `yaml:"body,omitempty" json:"body,omitempty"`
	// Headers are added to the request (values are templates too).
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Extract names values of the JSON response to keep for later steps:
	// variable → path of object keys and array indices joined by dots
	// (data.0.embedding). A path the response lacks fails the step.
	Extract map[string]string `yaml:"extract,omitempty" json:"extract,omitempty"`
	// Timeout bounds the step (default 60s), e.g. "5s".
	Timeout string `yaml:"timeout,omitempty" json:"timeout,omitempty"`
}

// DefaultStepTimeout is a step's timeout when it sets none.
const DefaultStepTimeout = 60 * time.Second

// ReadFile reads a workflow definition from a YAML file; the read ends
// when ctx is done (a FIFO with no writer cannot keep Ctrl-C from working).
func ReadFile(ctx context.Context, path string) (*Spec, error) {
	b, err := capread.ReadFile(ctx, path, capread.SettingsLimit, "")
	if err != nil {
		return nil, fmt.Errorf("reading workflow: %w", err)
	}
	s, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("reading workflow %s: %w", path, err)
	}
	return s, nil
}

// Parse reads a workflow definition (YAML, or JSON which is YAML) and
// checks it: unknown fields, step names, templates and extract paths.
// YAML nested too deep or too big is refused before it is parsed (see
// yamllimit).
func Parse(b []byte) (*Spec, error) {
	var s Spec
	if err := yamllimit.Decode(b, &s); err != nil {
		var yerr yaml.Error
		if errors.As(err, &yerr) {
			return nil, fmt.Errorf("%s", yaml.FormatError(err, false, true))
		}
		return nil, err
	}
	if _, err := compile(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

// step is a compiled StepSpec.
type step struct {
	name, method string
	url, body    *payload.Template
	headers      map[string]*payload.Template
	extract      []extraction
	timeout      time.Duration
}

type extraction struct {
	name string
	path []string
}

// reserved names are variables every step sees; no step may take them.
var reserved = map[string]bool{"prompt": true, "target": true, "seq": true}

func compile(s *Spec) ([]step, error) {
	if len(s.Steps) == 0 {
		return nil, fmt.Errorf("workflow %q has no steps", s.Name)
	}
	if s.Name == "" {
		s.Name = "workflow"
	}
	seen := map[string]bool{}
	out := make([]step, 0, len(s.Steps))
	for i, sp := range s.Steps {
		where := fmt.Sprintf("step %d (%s)", i+1, sp.Name)
		if !ident(sp.Name) {
			return nil, fmt.Errorf("%s: name must be letters, digits and _, starting with a letter", where)
		}
		if seen[sp.Name] || reserved[sp.Name] {
			return nil, fmt.Errorf("%s: the name is taken (by another step, or prompt/target/seq)", where)
		}
		seen[sp.Name] = true
		if sp.URL == "" {
			return nil, fmt.Errorf("%s: url is required", where)
		}
		st := step{name: sp.Name, method: strings.ToUpper(sp.Method), timeout: DefaultStepTimeout, headers: map[string]*payload.Template{}}
		if st.method == "" {
			st.method = "GET"
			if sp.Body != "" {
				st.method = "POST"
			}
		}
		var err error
		if st.url, err = payload.Parse(where+" url", sp.URL); err != nil {
			return nil, err
		}
		if sp.Body != "" {
			if st.body, err = payload.Parse(where+" body", sp.Body); err != nil {
				return nil, err
			}
		}
		for k, v := range sp.Headers {
			if st.headers[k], err = payload.Parse(where+" header "+k, v); err != nil {
				return nil, err
			}
		}
		for name, path := range sp.Extract {
			if !ident(name) {
				return nil, fmt.Errorf("%s: extract %q: variable names are letters, digits and _", where, name)
			}
			parts := strings.Split(path, ".")
			for _, p := range parts {
				if p == "" {
					return nil, fmt.Errorf("%s: extract %s: path %q has an empty part", where, name, path)
				}
			}
			st.extract = append(st.extract, extraction{name, parts})
		}
		if sp.Timeout != "" {
			d, err := time.ParseDuration(sp.Timeout)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("%s: timeout %q: want a positive duration such as 5s", where, sp.Timeout)
			}
			st.timeout = d
		}
		out = append(out, st)
	}
	return out, nil
}

// ordered refuses a step whose templates read the values of a step that
// runs later than it (or of the step itself): at run time every request
// failed there, counted against the target. A name in vars (the
// variables every step sees, such as target) is a value from the start,
// and may be read before the step of that name replaces it.
func ordered(steps []step, vars map[string]any) error {
	index := make(map[string]int, len(steps))
	for i := range steps {
		index[steps[i].name] = i
	}
	for i := range steps {
		if err := readsEarlier(i, &steps[i], index, vars); err != nil {
			return err
		}
	}
	return nil
}

// readsEarlier is ordered for step i.
func readsEarlier(i int, st *step, index map[string]int, vars map[string]any) error {
	tpls := []*payload.Template{st.url, st.body}
	for _, h := range st.headers {
		tpls = append(tpls, h)
	}
	for _, t := range tpls {
		if t == nil {
			continue
		}
		for _, f := range t.Fields() {
			if len(f.Path) < 2 || f.Path[0] != "Vars" {
				continue
			}
			j, ok := index[f.Path[1]]
			_, given := vars[f.Path[1]]
			switch {
			case !ok || j < i || given:
				continue
			case j == i:
				return fmt.Errorf("%s: reads .Vars.%s, the step's own values, which exist only once it has run: a step reads the values of the steps before it", f.Where, f.Path[1])
			default:
				return fmt.Errorf("%s: reads .Vars.%s, the values of step %d, which runs later: a step reads the values of the steps before it (move %s earlier, or rename a dataset variable of that name)", f.Where, f.Path[1], j+1, f.Path[1])
			}
		}
	}
	return nil
}

func ident(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// lookup follows path through a decoded JSON value.
func lookup(v any, path []string) (any, error) {
	for i, p := range path {
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[p]
			if !ok {
				return nil, fmt.Errorf("the response has no %s", strings.Join(path[:i+1], "."))
			}
			v = next
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(x) {
				return nil, fmt.Errorf("the response has no %s (an array of %d)", strings.Join(path[:i+1], "."), len(x))
			}
			v = x[n]
		default:
			return nil, fmt.Errorf("the response has no %s (%s is not an object or array)", strings.Join(path[:i+1], "."), strings.Join(path[:i], "."))
		}
	}
	return v, nil
}

// trimBody shortens a response body for an error message.
func trimBody(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
