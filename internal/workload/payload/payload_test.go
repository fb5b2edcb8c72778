package payload

import (
	"regexp"
	"runtime"
	"strings"
	"testing"
)

func TestExecute(t *testing.T) {
	tests := []struct {
		tmpl string
		vars map[string]any
		want string // a regexp
	}{
		{`{"id": {{.Seq}}}`, nil, `^\{"id": 7\}$`},
		{`{"q": {{json .Vars.q}}}`, map[string]any{"q": `say "hi"`}, `^\{"q": "say \\"hi\\""\}$`},
		{`{{.RandInt 5 5}}`, nil, `^5$`},
		{`{{.RandInt 1 3}}`, nil, `^[123]$`},
		{`{{.Choice "a" "b"}}`, nil, `^[ab]$`},
		{`{{.UUID}}`, nil, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`},
		{`{{printf "%.1f" (.RandFloat 2 2)}}`, nil, `^2\.0$`},
		{`no template`, nil, `^no template$`},
	}
	for _, tc := range tests {
		tp, err := Parse("t", tc.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", tc.tmpl, err)
		}
		got, err := tp.Execute(NewData(7, tc.vars, 1))
		if err != nil || !regexp.MustCompile(tc.want).MatchString(got) {
			t.Errorf("%s = %q, %v; want %s", tc.tmpl, got, err, tc.want)
		}
	}
}

func TestDeterministic(t *testing.T) {
	tp, _ := Parse("t", `{{.UUID}} {{.RandInt 0 1000000}}`)
	a, _ := tp.Execute(NewData(3, nil, 9))
	b, _ := tp.Execute(NewData(3, nil, 9))
	c, _ := tp.Execute(NewData(4, nil, 9))
	if a != b || a == c {
		t.Fatalf("same request %q/%q, next %q", a, b, c)
	}
}

func TestErrors(t *testing.T) {
	if _, err := Parse("--body", `{{.Seq`); err == nil || !strings.Contains(err.Error(), "--body") {
		t.Errorf("parse error %v does not name the template", err)
	}
	tp, _ := Parse("t", `{{.Vars.missing}}`)
	if _, err := tp.Execute(NewData(0, map[string]any{}, 1)); err == nil {
		t.Error("a missing var filled silently")
	}
	tp, _ = Parse("t", `{{.RandInt 3 1}}`)
	if _, err := tp.Execute(NewData(0, nil, 1)); err == nil {
		t.Error("RandInt 3 1 accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`{"a": {{.RandInt 1 9}}, "b": {{json .Vars.x}}}`)
	f.Add(`{{.Choice}}`)
	f.Add(`{{range 100000000000}}x{{end}}`) // filled to a fatal out of memory
	f.Add(`{{define "a"}}{{template "a"}}{{template "a"}}{{end}}{{template "a"}}`)
	f.Fuzz(func(t *testing.T, in string) {
		tp, err := Parse("f", in)
		if err != nil {
			return
		}
		tp.Execute(NewData(1, map[string]any{"x": 1}, 1)) // must not panic
	})
}

// TestHostile: templates whose fill has no end, or ends after gigabytes,
// are refused when parsed or stopped at a bound with an error (a loop over
// 100 billion grew its output by 400 MB/s to a fatal out of memory). The
// loops here end, so that the old code failed the test rather than the
// machine: it filled each one, taking seconds and hundreds of MB.
func TestHostile(t *testing.T) {
	for _, tc := range []struct {
		name, tmpl string
		seq        uint64
		parse      bool // the error comes from Parse
		want       string
		// bound is of the bytes allocated (0: 64 MiB), which counts each
		// byte made and dropped: the 1 MB strings of printf in "a big
		// output" come to 500 MiB, while what is held at once stays under
		// twice MaxOutput.
		bound uint64
	}{
		{"a long loop", `{{range 20000000}}0123456789{{end}}`, 0, false, "its {{range}} loops would run more than 1000000 times", 0},
		{"a long empty loop", `{{range 100000000}}{{end}}`, 0, false, "its {{range}} loops would run more than 1000000 times", 0},
		{"nested loops", `{{range 400}}{{range 400}}{{range 400}}{{end}}{{end}}{{end}}`, 0, false, "its {{range}} loops would run more than 1000000 times", 0},
		{"a loop of .Seq", `{{range .Seq}}x{{end}}`, 100_000_000, false, "its {{range}} loops would run more than 1000000 times", 0},
		{"a loop of a var", `{{range .Vars.n}}x{{end}}`, 0, false, "its {{range}} loops would run more than 1000000 times", 0},
		{"a big output", `{{range 1000}}{{printf "%0999999d" 0}}{{end}}`, 0, false, "filling template t: the output is over 64 MiB, the limit of one filled template", 768 << 20},
		// Text made and dropped each turn: 2 GB (a loop of a million
		// made a TB, minutes of work).
		{"text made, not written", `{{range 2000}}{{$x := printf "%0999999d" 0}}{{end}}`, 0, false, "filling template t: its functions (printf, json, ...) made more than 128 MiB of text", 1 << 30},
		{"text made in a condition", `{{range 2000}}{{if eq (len (printf "%0999999d" 0)) 0}}{{end}}{{end}}`, 0, false, "made more than 128 MiB of text", 1 << 30},
		{"define", `{{define "a"}}x{{end}}{{template "a"}}`, 0, true, "{{define}} and {{block}} are not supported", 0},
		{"block", `{{block "a" .}}x{{end}}`, 0, true, "{{define}} and {{block}} are not supported", 0},
		// Calling itself twice doubles the work at each call.
		{"template", `{{if .Vars}}{{template "t"}}{{template "t"}}{{end}}`, 0, true, "t:1:23: {{template}} is not supported", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			tp, err := Parse("t", tc.tmpl)
			if err == nil {
				if tc.parse {
					t.Fatalf("parsed")
				}
				_, err = tp.Execute(NewData(tc.seq, map[string]any{"n": int64(1e8)}, 1))
			}
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			bound := tc.bound
			if bound == 0 {
				bound = 64 << 20
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > bound {
				t.Errorf("allocated %d MiB, over %d MiB", n>>20, bound>>20)
			}
		})
	}
}

// TestLoops: loops within the bounds fill as text/template fills them.
func TestLoops(t *testing.T) {
	for _, tc := range []struct{ tmpl, want string }{
		{`{{range 3}}a{{end}}`, "aaa"},
		{`{{range $i, $e := .Vars.l}}{{$i}}{{$e}}{{end}}`, "0x1y"},
		{`{{range .Vars.none}}a{{else}}none{{end}}`, "none"},
		{`{{range $k, $v := .Vars.m}}{{$k}}={{$v}};{{end}}`, "a=1;b=2;"},
		{`{{range 10}}{{if eq . 3}}{{break}}{{end}}{{.}}{{end}}`, "012"},
		{`{{range 1000}}{{range 999}}{{end}}{{end}}`, ""},
		{`{{range 2}}{{range $.Vars.l}}{{.}}{{end}}{{end}}`, "xyxy"},
		// The text-making functions, counted, work as text/template's.
		{`{{printf "%s-%d" "a" 1}} {{print "a" 1}} {{println "b"}}`, "a-1 a1 b\n"},
		{`{{"<a&b>" | html}} {{js "'"}} {{urlquery "a b"}} {{json .Vars.l}}`, `&lt;a&amp;b&gt; \' a+b ["x","y"]`},
		{`{{if printf "x"}}{{with $y := print "y"}}{{$y}}{{end}}{{end}}{{(printf "%d" (len (print "abc")))}}`, "y3"},
	} {
		tp, err := Parse("t", tc.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", tc.tmpl, err)
		}
		got, err := tp.Execute(NewData(0, map[string]any{"l": []any{"x", "y"}, "none": []any{}, "m": map[string]any{"b": 2, "a": 1}}, 1))
		if err != nil || got != tc.want {
			t.Errorf("%s = %q, %v; want %q", tc.tmpl, got, err, tc.want)
		}
	}
}
