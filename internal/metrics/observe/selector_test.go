package observe

import (
	"reflect"
	"testing"
)

func TestParseSelector(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Selector
		err  bool
	}{
		{in: "vllm:num_requests_running", want: Selector{Name: "vllm:num_requests_running"}},
		{in: `  up{job="a"} `, want: Selector{Name: "up", Labels: map[string]string{"job": "a"}}},
		{in: `x{a="1",b="two words"}`, want: Selector{Name: "x", Labels: map[string]string{"a": "1", "b": "two words"}}},
		{in: `{"my.metric",a="1"}`, want: Selector{Name: "my.metric", Labels: map[string]string{"a": "1"}}},
		{in: "", err: true},
		{in: `x{a=~"1"}`, err: true},
		{in: `x{a!="1"}`, err: true},
		{in: "x y", err: true},
		{in: "x\ny", err: true},
		{in: "# HELP x", err: true},
		{in: `x{a="1"`, err: true},
	} {
		got, err := ParseSelector(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("ParseSelector(%q) error %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if !tc.err && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseSelector(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

func TestSelectorString(t *testing.T) {
	s := MustSelector(`x{b="2",a="1"}`)
	if got, want := s.String(), `x{a="1",b="2"}`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	if back := MustSelector(s.String()); !reflect.DeepEqual(back, s) {
		t.Errorf("round trip %#v != %#v", back, s)
	}
}

func FuzzParseSelector(f *testing.F) {
	for _, s := range []string{"a", `a{b="c"}`, `{"a.b"}`, `a{b="c\"d"}`, "a{", "vllm:x_total"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := ParseSelector(s)
		if err != nil {
			return
		}
		if sel.Name == "" {
			t.Fatalf("ParseSelector(%q) gave an empty name", s)
		}
		// What was parsed writes back to a selector that parses the same.
		back, err := ParseSelector(sel.String())
		if err != nil {
			t.Fatalf("ParseSelector(%q).String() = %q does not parse: %v", s, sel.String(), err)
		}
		if back.String() != sel.String() {
			t.Fatalf("round trip of %q: %q != %q", s, back.String(), sel.String())
		}
	})
}
