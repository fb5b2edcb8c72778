package yamllimit

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// nested returns n block mappings each within the one before.
func nested(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	return b.String()
}

func TestCheck(t *testing.T) {
	deep := MaxDepth + 1
	for _, tc := range []struct {
		name, yaml string
		limit      string // "": within the limits
		line       int
	}{
		{"flow lists", "a: " + strings.Repeat("[", 30_000) + strings.Repeat("]", 30_000) + "\n", "depth", 1},
		{"flow mappings", "a: " + strings.Repeat("{a: ", deep) + "1" + strings.Repeat("}", deep), "depth", 1},
		{"unclosed flow", "x: 1\na: " + strings.Repeat("[", 50_000), "depth", 2},
		{"block mappings", nested(deep), "depth", deep},
		{"compact lists", "a:\n" + strings.Repeat("- ", deep) + "x\n", "depth", 2},
		{"flow within block", nested(60) + strings.Repeat(" ", 60) + "b: " + strings.Repeat("[", 50) + strings.Repeat("]", 50), "depth", 61},
		{"many list items", "a: [" + strings.Repeat("1,", MaxNodes) + "1]\n", "nodes", 1},
		{"many lines", "a:\n" + strings.Repeat("- 1\n", MaxNodes+1), "nodes", MaxNodes + 1},

		{"depth at the limit", nested(MaxDepth), "", 0},
		{"flow at the limit", "a: " + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1), "", 0},
		{"nodes at the limit", "a: [" + strings.Repeat("1,", MaxNodes/2-2) + "1]\n", "", 0},
		// Brackets that are text, not collections.
		{"double-quoted", `a: "` + strings.Repeat("[", 500) + `\" [[["` + "\n", "", 0},
		{"single-quoted", `a: '` + strings.Repeat("[", 500) + `'' [[['` + "\n", "", 0},
		{"quoted over lines", "a: \"x\n" + strings.Repeat("[{", 500) + "\n  \"\nb: 1\n", "", 0},
		{"plain", "a: x" + strings.Repeat("[", 500) + " y{{\n", "", 0},
		{"comment", "a: 1 # " + strings.Repeat("[", 500) + "\n# " + strings.Repeat("{", 500) + "\n", "", 0},
		{"literal block", "a: |\n  " + strings.Repeat("[", 500) + "\n\n  " + strings.Repeat("- ", 500) + "\nb: 1\n", "", 0},
		{"folded block in a list", "a:\n  - >-\n    " + strings.Repeat("{", 500) + "\n  - x\n", "", 0},
		{"a template", `body: '{"model": "{{ .model }}", "messages": [{"role": "user", "content": {{ json .prompt }}}]}'` + "\n", "", 0},
		{"json", `{"steps": [{"name": "a", "body": {"x": [1, 2, {"y": "]]]"}]}}]}`, "", 0},
		{"anchor and tag", "a: &x !!map {b: [1]}\nc: *x\n", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.yaml))
			if tc.limit == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Limit != tc.limit || e.Line != tc.line {
				t.Fatalf("error %v, want over the %s limit on line %d", err, tc.limit, tc.line)
			}
		})
	}
}

// TestCheckExamples: the repository's own YAML files pass.
func TestCheckExamples(t *testing.T) {
	n := 0
	for _, glob := range []string{"../../examples/*.yaml", "../../examples/*/*.yaml", "../../experiment/*.yaml", "../probe/suites/*.yaml", "../client/workflow/testdata/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := Check(b); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no YAML files found")
	}
}

// TestCheckBeforeParse: the 60 KB file of nested brackets took the YAML
// library 1.4 GB; checked first it is refused having allocated next to
// nothing, and what Check passes at the limits the library parses in a few
// MB.
func TestCheckBeforeParse(t *testing.T) {
	hostile := []byte("a: " + strings.Repeat("[", 30_000) + strings.Repeat("]", 30_000) + "\n")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := Check(hostile)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("nested brackets passed")
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("Check allocated %d bytes", n)
	}
	for _, ok := range []string{
		"a: " + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + "\n",
		nested(MaxDepth),
	} {
		if err := Check([]byte(ok)); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&before)
		var v any
		if err := yaml.Unmarshal([]byte(ok), &v); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
			t.Errorf("parsing YAML at the depth limit allocated %d MB", n>>20)
		}
	}
}

// TestDecodeRecovers: inputs on which go-yaml v1.19.2 panics (found by
// the fuzz targets of the workflow, experiment and probe readers) come
// back as errors.
func TestDecodeRecovers(t *testing.T) {
	for _, in := range []string{"steps: ! ", "stages:\n  - [\n", "messages: !00 00"} {
		var v struct {
			Steps    []struct{ Name string }  `yaml:"steps"`
			Stages   []struct{ Rate float64 } `yaml:"stages"`
			Messages []string                 `yaml:"messages"`
		}
		if err := Decode([]byte(in), &v); err == nil {
			t.Errorf("%q: decoded, want an error", in)
		}
	}
	var v struct{ A int }
	if err := Decode([]byte("a: 1\n"), &v); err != nil || v.A != 1 {
		t.Errorf("a: 1 decoded as %+v, %v", v, err)
	}
}
