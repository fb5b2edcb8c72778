package payload

import (
	"reflect"
	"strings"
	"testing"
)

func TestFields(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{`{"q": {{json .Vars.q}}}`, []string{"Vars.q"}},
		{`{{.Seq}} {{$.Vars.embed.embedding}}`, []string{"Seq", "Vars.embed.embedding"}},
		{`{{if .Vars.a}}{{printf "%v" .Vars.b}}{{else}}{{.Vars.c}}{{end}}`, []string{"Vars.a", "Vars.b", "Vars.c"}},
		{`{{range $i, $v := .Vars.list}}{{$v}}{{end}}`, []string{"Vars.list"}},
		{`{{with .Vars}}{{.x}}{{end}}`, []string{"Vars", "x"}},
		{`{{(.Vars).y}}`, []string{"Vars"}}, // a field of a pipeline's value is not a chain from the data
		{`no fields {{.RandInt 1 2}}`, []string{"RandInt"}},
	} {
		tpl, err := Parse("t", tc.text)
		if err != nil {
			t.Fatalf("%s: %v", tc.text, err)
		}
		var got []string
		for _, f := range tpl.Fields() {
			got = append(got, strings.Join(f.Path, "."))
			if !strings.HasPrefix(f.Where, "t:1:") {
				t.Errorf("%s: field %v at %q, want t:1:col", tc.text, f.Path, f.Where)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: fields %q, want %q", tc.text, got, tc.want)
		}
	}
}
