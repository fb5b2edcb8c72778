package workload

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/metrics/check"
)

func TestParseMutation(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"typo", "typo@0.2"},
		{"Synonym, typo @ 0.5", "synonym,typo@0.5"},
		{"all@0.1", "format,order,synonym,typo,whitespace@0.1"},
		{"whitespace,whitespace@1", "whitespace@1"},
	} {
		m, err := ParseMutation(tc.spec)
		if err != nil || m.String() != tc.want {
			t.Errorf("ParseMutation(%q) = %v, %v; want %s", tc.spec, m, err, tc.want)
		}
	}
	for _, bad := range []string{"", "typo@0", "typo@1.5", "typo@x", "shout", "typo,@0.2"} {
		if _, err := ParseMutation(bad); err == nil {
			t.Errorf("ParseMutation(%q) accepted", bad)
		}
	}
}

// TestMutationKinds applies each kind at strength 1 to a known prompt and
// checks what each does, and that the same seed gives the same text.
func TestMutationKinds(t *testing.T) {
	const prompt = "Please explain the refund policy. It is about a large order. How fast is shipping?"
	for _, tc := range []struct {
		kind  string
		check func(string) bool
	}{
		{MutateSynonym, func(s string) bool {
			return !strings.Contains(s, "explain") && !strings.Contains(s, "large") && strings.HasSuffix(s, "?")
		}},
		{MutateOrder, func(s string) bool {
			return strings.HasPrefix(s, "It is about a large order. Please explain") && strings.HasSuffix(s, "How fast is shipping?")
		}},
		{MutateWhitespace, func(s string) bool {
			return strings.Contains(s, "  ") || strings.Contains(s, "\n")
		}},
		{MutateTypo, func(s string) bool {
			return s != prompt && len(strings.Fields(s)) == len(strings.Fields(prompt))
		}},
		{MutateFormat, func(s string) bool {
			return strings.HasPrefix(s, "- ") || strings.HasSuffix(strings.SplitN(s, " ", 2)[0], ":")
		}},
	} {
		m := Mutation{Kinds: []string{tc.kind}, Strength: 1}
		got, kinds := m.Apply(prompt, newRand(1, 2))
		again, _ := m.Apply(prompt, newRand(1, 2))
		if !tc.check(got) || len(kinds) != 1 || kinds[0] != tc.kind || got != again {
			t.Errorf("%s: %q (kinds %v; again %q)", tc.kind, got, kinds, again)
		}
	}
	// At a low strength most prompts keep most of their words.
	m, _ := ParseMutation("synonym,typo@0.05")
	same := 0
	for n := uint64(0); n < 200; n++ {
		got, _ := m.Apply(prompt, newRand(3, n))
		if got == prompt {
			same++
		}
	}
	if same < 40 || same > 180 {
		t.Errorf("%d of 200 prompts unchanged at strength 0.05", same)
	}
}

func TestParseConstraints(t *testing.T) {
	c, err := ParseConstraints("max_context=32k, tool_calls>=2")
	if err != nil || c.MaxContext != 32768 || c.ToolCalls != 2 || c.String() != "max_context=32768,tool_calls>=2" {
		t.Fatalf("%+v %v", c, err)
	}
	if c, err := ParseConstraints("tool_calls ≥ 3,max_context<=4096"); err != nil || c.ToolCalls != 3 || c.MaxContext != 4096 {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{"", "max_context=8", "max_context>5k", "tool_calls>=0", "tool_calls>=9", "tool_calls<2", "max_tokens=5", "tool_calls>=2,tool_calls>=3", "max_context=1e9k"} {
		if _, err := ParseConstraints(bad); err == nil {
			t.Errorf("ParseConstraints(%q) accepted", bad)
		}
	}
}

// TestIntentShaping builds an intent mix with its own sampling, model,
// mutation and constraints, and checks what its requests carry.
func TestIntentShaping(t *testing.T) {
	long := strings.Repeat("word ", 400) + "What is the answer?"
	b, err := Build(experiment.Workload{
		Temperature: "0.2",
		Intents: []experiment.Intent{
			{Name: "lora", Weight: 1, Prompts: []string{long}, OutputTokens: "64", Model: "base:sql-adapter",
				Temperature: "uniform:0.3:0.8", TopP: "0.9", Constraints: "max_context=256, tool_calls>=2", Mutate: "typo@0.5"},
			{Name: "plain", Weight: 1, Prompts: []string{"Hello there, how are you?"}, OutputTokens: "8"},
		},
	}, BuildOptions{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	var lora, plain int
	for n := uint64(0); n < 100; n++ {
		r, err := b.Source.Request(n)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(r.Messages)
		switch r.Intent {
		case "lora":
			lora++
			if r.Model != "base:sql-adapter" || r.TopP == nil || *r.TopP != 0.9 || r.Temperature == nil || *r.Temperature < 0.3 || *r.Temperature > 0.8 {
				t.Fatalf("lora request: model %q top_p %v temperature %v", r.Model, r.TopP, r.Temperature)
			}
			// max_context 256 with max_tokens 64: the prompt cut to about
			// 192 tokens (4 characters a token without a tokenizer), the
			// question at its end kept; two tools and their check.
			text := r.Prompt
			if len(r.Messages) > 0 {
				text = r.Messages[len(r.Messages)-1].Content
			}
			if est := (len(text) + 3) / 4; est > 192 || !strings.Contains(text, "call at least 2 of the tools") || !strings.Contains(strings.ToLower(text), "answer") {
				t.Fatalf("lora prompt (%d tokens est.): %q", est, text)
			}
			var tools []map[string]any
			if err := json.Unmarshal(r.Tools, &tools); err != nil || len(tools) != 2 {
				t.Fatalf("tools %s: %v", r.Tools, err)
			}
			if r.Checks == nil || len(r.Checks.Checks) != 1 || r.Checks.Checks[0].Name() != "tool_calls>=2" || !r.KeepAnswer {
				t.Fatalf("checks %+v", r.Checks)
			}
			if c := r.Checks.Checks[0]; c.Pass(check.Answer{ToolCalls: 1}) || !c.Pass(check.Answer{ToolCalls: 2}) {
				t.Fatal("the tool_calls>=2 check does not count calls")
			}
			if !hasLabel(r, "constraint", "tools+truncated") || !hasLabel(r, "model", "base:sql-adapter") {
				t.Fatalf("labels %v", r.Labels)
			}
			if hasLabel(r, "mutation", "typo") != (r.Original != "") {
				t.Fatalf("mutation label %v with original %q", r.Labels, r.Original)
			}
		case "plain":
			plain++
			// The workload's temperature; no model, no top_p, no tools.
			if r.Temperature == nil || *r.Temperature != 0.2 || r.TopP != nil || r.Model != "" || len(r.Tools) != 0 || strings.Contains(string(body), "tools") {
				t.Fatalf("plain request %+v", r)
			}
		}
	}
	if lora < 30 || plain < 30 {
		t.Fatalf("mix %d lora, %d plain", lora, plain)
	}
}

func hasLabel(r *Request, k, v string) bool {
	for _, l := range r.Labels {
		if l.Key == k && l.Value == v {
			return true
		}
	}
	return false
}

func TestParseSampling(t *testing.T) {
	s, err := ParseSampling("temperature", "uniform:0.3:0.8", 2)
	if err != nil || s.Lo != 0.3 || s.Hi != 0.8 || s.String() != "uniform:0.3:0.8" {
		t.Fatalf("%+v %v", s, err)
	}
	var sum float64
	for n := uint64(0); n < 1000; n++ {
		v := s.Draw(newRand(1, n))
		if v < 0.3 || v > 0.8 {
			t.Fatalf("draw %v", v)
		}
		sum += v
	}
	if mean := sum / 1000; math.Abs(mean-0.55) > 0.02 {
		t.Errorf("mean draw %v, want 0.55", mean)
	}
	for _, bad := range []string{"", "hot", "-1", "3", "uniform:0.8:0.3", "uniform:0.3", "NaN"} {
		if _, err := ParseSampling("temperature", bad, 2); err == nil {
			t.Errorf("ParseSampling(%q) accepted", bad)
		}
	}
}
