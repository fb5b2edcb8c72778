package check

import (
	"math"
	"strings"
	"testing"

	"github.com/spate-dev/spate/experiment"
)

func TestChecks(t *testing.T) {
	schema := `{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}`
	cases := []struct {
		spec  experiment.Check
		text  string
		tools int
		want  bool
	}{
		{experiment.Check{Kind: "regex", Value: `\b\d{4}\b`}, "founded in 1889.", 0, true},
		{experiment.Check{Kind: "regex", Value: `\b\d{4}\b`}, "long ago", 0, false},
		{experiment.Check{Kind: "contains", Value: "Paris"}, "It is paris.", 0, true},
		{experiment.Check{Kind: "contains", Value: "Paris"}, "It is Lyon.", 0, false},
		{experiment.Check{Kind: "not_contains", Value: "sorry"}, "Sorry, I can't.", 0, false},
		{experiment.Check{Kind: "not_contains", Value: "sorry"}, "Here it is.", 0, true},
		{experiment.Check{Kind: "equals", Value: "Paris"}, "  paris. ", 0, true},
		{experiment.Check{Kind: "equals", Value: "Paris"}, "Paris, France", 0, false},
		{experiment.Check{Kind: "json"}, "```json\n{\"a\": 1}\n```", 0, true},
		{experiment.Check{Kind: "json"}, "{\"a\": 1", 0, false},
		{experiment.Check{Kind: "json_schema", Value: schema}, `{"city": "Oslo"}`, 0, true},
		{experiment.Check{Kind: "json_schema", Value: schema}, `{"town": "Oslo"}`, 0, false},
		{experiment.Check{Kind: "json_schema", Value: schema}, `not json`, 0, false},
		{experiment.Check{Kind: "rouge_l", Value: "the cat sat on the mat", Min: 0.8}, "The cat sat on the mat!", 0, true},
		{experiment.Check{Kind: "rouge_l", Value: "the cat sat on the mat", Min: 0.8}, "a dog ran in the park", 0, false},
		{experiment.Check{Kind: "tool_call"}, "", 1, true},
		{experiment.Check{Kind: "tool_call"}, "I would call a tool", 0, false},
		{experiment.Check{Kind: "min_length", Min: 5}, "héllo", 0, true},
		{experiment.Check{Kind: "min_length", Min: 6}, "héllo", 0, false},
		{experiment.Check{Kind: "max_length", Min: 5}, "héllo", 0, true},
		{experiment.Check{Kind: "max_length", Min: 4}, "héllo", 0, false},
	}
	for _, c := range cases {
		set, err := Compile([]experiment.Check{c.spec})
		if err != nil {
			t.Fatalf("%+v: %v", c.spec, err)
		}
		got := set.Eval(Answer{Text: []byte(c.text), ToolCalls: c.tools}, nil)
		if len(got) != 1 || got[0].Pass != c.want || got[0].Name != c.spec.Kind {
			t.Errorf("%s %q on %q: got %+v, want pass=%v", c.spec.Kind, c.spec.Value, c.text, got, c.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, c := range []struct {
		spec experiment.Check
		want string
	}{
		{experiment.Check{Kind: "regex", Value: "("}, "regular expression"},
		{experiment.Check{Kind: "contains"}, "needs a value"},
		{experiment.Check{Kind: "json_schema", Value: "{"}, "JSON schema"},
		{experiment.Check{Kind: "rouge_l", Value: "x"}, "min in (0, 1]"},
		{experiment.Check{Kind: "bogus"}, "unknown kind"},
	} {
		_, err := Compile([]experiment.Check{{Kind: "contains", Value: "ok"}, c.spec})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "check 2") {
			t.Errorf("%+v: error %v, want one naming check 2 and %q", c.spec, err, c.want)
		}
	}
}

func TestRougeL(t *testing.T) {
	for _, c := range []struct {
		ref, cand string
		want      float64
	}{
		// LCS "the cat the" = 3 … worked by hand: ref 6 words, cand 4.
		{"the cat sat on the mat", "the cat the dog", 2 * (3.0 / 4) * (3.0 / 6) / (3.0/4 + 3.0/6)},
		{"a b c", "a b c", 1},
		{"a b c", "d e f", 0},
		{"", "a", 0},
		{"police killed the gunman", "the gunman was killed by police", 2 * (2.0 / 6) * (2.0 / 4) / (2.0/6 + 2.0/4)},
	} {
		if got := RougeL(Tokens(c.ref), Tokens(c.cand)); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("RougeL(%q, %q) = %v, want %v", c.ref, c.cand, got, c.want)
		}
	}
}
