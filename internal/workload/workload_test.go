package workload

import (
	"math"
	"strings"
	"testing"

	"github.com/spate-dev/spate/internal/workload/tokenizer"
)

func TestOneTokenWords(t *testing.T) {
	tok, err := tokenizer.CL100K()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range OneTokenWords {
		if n := tok.Count(" " + w); n != 1 {
			t.Errorf("%q is %d cl100k tokens, want 1", " "+w, n)
		}
	}
}

func TestSyntheticPromptLengths(t *testing.T) {
	tok, err := tokenizer.CL100K()
	if err != nil {
		t.Fatal(err)
	}
	s := Synthetic{Input: Lengths{Mean: 200, SD: 40, Min: 1}, Output: Lengths{Mean: 64, Min: 1}, Seed: 3}
	var sum float64
	const n = 300
	for i := uint64(0); i < n; i++ {
		r, _ := s.Request(i)
		if got := tok.Count(r.Prompt); got != r.InputTokens {
			t.Fatalf("request %d: prompt is %d tokens, InputTokens says %d", i, got, r.InputTokens)
		}
		if r.MaxTokens != 64 {
			t.Fatalf("MaxTokens = %d, want 64", r.MaxTokens)
		}
		sum += float64(r.InputTokens)
	}
	if mean := sum / n; math.Abs(mean-200) > 200*0.02+40*3/math.Sqrt(n) {
		t.Errorf("mean input length %.1f, want 200", mean)
	}
	a, _ := s.Request(5)
	b, _ := s.Request(5)
	c, _ := s.Request(6)
	if a.Prompt != b.Prompt || a.Prompt == c.Prompt {
		t.Error("synthetic requests are not deterministic per index, or repeat")
	}
}

func TestParseLengths(t *testing.T) {
	tests := []struct {
		in       string
		mean, sd float64
		ok       bool
	}{
		{"512", 512, 0, true}, {"512:64", 512, 64, true}, {" 10 : 2 ", 10, 2, true},
		{"", 0, 0, false}, {"x", 0, 0, false}, {"-1", 0, 0, false}, {"5:-1", 0, 0, false}, {"5:y", 0, 0, false},
	}
	for _, tc := range tests {
		l, err := ParseLengths(tc.in)
		if (err == nil) != tc.ok || (tc.ok && (l.Mean != tc.mean || l.SD != tc.sd)) {
			t.Errorf("ParseLengths(%q) = %+v, %v", tc.in, l, err)
		}
	}
}

func TestReadDataset(t *testing.T) {
	in := `{"prompt": "hi", "max_tokens": 5, "intent": "greet"}

{"messages": [{"role": "user", "content": "yo"}]}
{"body": {"q": 1}, "method": "post", "path": "/search"}
{"body": "raw text"}
`
	d, err := ReadDataset(strings.NewReader(in), "x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 4 {
		t.Fatalf("Len = %d", d.Len())
	}
	r0, _ := d.Request(0)
	r1, _ := d.Request(1)
	r2, _ := d.Request(2)
	r3, _ := d.Request(3)
	r4, _ := d.Request(4)
	if r0.Prompt != "hi" || r0.MaxTokens != 5 || r0.Intent != "greet" || r1.Messages[0].Content != "yo" ||
		string(r2.Body) != `{"q": 1}` || r2.Method != "POST" || r2.Path != "/search" || string(r3.Body) != "raw text" || r4.Prompt != "hi" {
		t.Fatalf("parsed wrong: %+v %+v %+v %+v", r0, r1, r2, r3)
	}
	if len(d.Digest()) != 64 {
		t.Fatalf("digest %q", d.Digest())
	}
}

func TestReadDatasetErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"prompt": "a"}` + "\n" + `{"prompt": 3}`, "x.jsonl, line 2"},
		{`{"promt": "a"}`, `unknown field "promt"`},
		{`{"prompt": "a", "messages": []}`, "exactly one of"},
		{`{}`, "exactly one of"},
		{`not json`, "line 1"},
		{"\n\n", "no requests"},
		{`{"messages": [{"content": "x"}]}`, "has no role"},
		{`{"prompt": "a", "max_tokens": -2}`, "max_tokens"},
	}
	for _, tc := range tests {
		_, err := ReadDataset(strings.NewReader(tc.in), "x.jsonl")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadDataset(%q) err = %v, want it to mention %q", tc.in, err, tc.want)
		}
	}
}

func FuzzReadDataset(f *testing.F) {
	f.Add(`{"prompt": "hi", "max_tokens": 5}`)
	f.Add(`{"messages": [{"role": "user", "content": "yo"}]}`)
	f.Add(`{"body": {"a": [1, 2]}}`)
	f.Fuzz(func(t *testing.T, in string) {
		d, err := ReadDataset(strings.NewReader(in), "f")
		if err != nil {
			return
		}
		for i := 0; i < d.Len(); i++ {
			r, err := d.Request(uint64(i))
			if err != nil || r.MaxTokens < 0 {
				t.Fatalf("request %d: %+v %v", i, r, err)
			}
		}
	})
}

func TestDatasetTemplates(t *testing.T) {
	in := `{"body": "{\"q\": {{json .Vars.q}}, \"n\": {{.Seq}}, \"k\": {{.RandInt 1 9}}}", "vars": {"q": "paris"}}
{"prompt": "Tell me about {{.Vars.city}}.", "vars": {"city": "Lyon"}}
`
	d, err := ReadDataset(strings.NewReader(in), "t.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	src := WithTemplates(d, 1)
	r0, err := src.Request(0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(r0.Body), `{"q": "paris", "n": 0, "k": `) || r0.BodyTemplate != nil {
		t.Fatalf("body %s", r0.Body)
	}
	r2, _ := src.Request(2)
	if !strings.Contains(string(r2.Body), `"n": 2`) {
		t.Fatalf("body of request 2: %s", r2.Body)
	}
	r1, _ := src.Request(1)
	if r1.Prompt != "Tell me about Lyon." {
		t.Fatalf("prompt %q", r1.Prompt)
	}
	again, _ := WithTemplates(d, 1).Request(0)
	if string(again.Body) != string(r0.Body) {
		t.Fatal("templates are not deterministic")
	}
	if _, err := ReadDataset(strings.NewReader(`{"prompt": "{{.Vars.x"}`), "t.jsonl"); err == nil || !strings.Contains(err.Error(), "t.jsonl, line 1") {
		t.Fatalf("template error %v does not name the line", err)
	}
}
