package payload

import (
	"regexp"
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
	f.Fuzz(func(t *testing.T, in string) {
		tp, err := Parse("f", in)
		if err != nil {
			return
		}
		tp.Execute(NewData(1, map[string]any{"x": 1}, 1)) // must not panic
	})
}
