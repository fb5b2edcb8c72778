package workload

import (
	"reflect"
	"testing"
	"unicode/utf8"
)

// FuzzShapingSpecs fuzzes the parsers of mutate specs, constraints and
// sampling parameters: no panic, canonical forms that read back equal,
// and mutations of any text that are deterministic and keep valid UTF-8
// valid.
func FuzzShapingSpecs(f *testing.F) {
	for _, s := range []string{"synonym,typo@0.2", "all", "all@1", "format@0.5", "typo@", "@0.2", "max_context=32k,tool_calls>=2",
		"tool_calls≥8", "max_context<=16", "uniform:0.3:0.8", "0.7", "uniform:1:0", "Please explain. It is big. Why?", "- a\n- b\n- c"} {
		f.Add(s, "Please explain the refund policy. It is about a large order. How fast is shipping?")
	}
	f.Fuzz(func(t *testing.T, spec, text string) {
		if m, err := ParseMutation(spec); err == nil {
			again, err := ParseMutation(m.String())
			if err != nil || !reflect.DeepEqual(m, again) {
				t.Fatalf("ParseMutation(%q) = %+v; String %q reads back %+v, %v", spec, m, m.String(), again, err)
			}
			all := Mutation{Kinds: mutateKinds, Strength: m.Strength}
			a, _ := all.Apply(text, newRand(1, 1))
			b, _ := all.Apply(text, newRand(1, 1))
			if a != b {
				t.Fatalf("mutating %q is not deterministic", text)
			}
			if utf8.ValidString(text) && !utf8.ValidString(a) {
				t.Fatalf("mutating valid %q gave invalid UTF-8 %q", text, a)
			}
		}
		if c, err := ParseConstraints(spec); err == nil {
			again, err := ParseConstraints(c.String())
			if err != nil || again != c || (c.MaxContext == 0 && c.ToolCalls == 0) {
				t.Fatalf("ParseConstraints(%q) = %+v; String %q reads back %+v, %v", spec, c, c.String(), again, err)
			}
			r := &Request{Prompt: text, MaxTokens: 10}
			c.apply(r, nil)
		}
		if s, err := ParseSampling("x", spec, 2); err == nil {
			again, err := ParseSampling("x", s.String(), 2)
			if err != nil || again != s || s.Lo > s.Hi || s.Lo < 0 || s.Hi > 2 {
				t.Fatalf("ParseSampling(%q) = %+v; String %q reads back %+v, %v", spec, s, s.String(), again, err)
			}
		}
	})
}
