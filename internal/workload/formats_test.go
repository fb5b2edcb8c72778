package workload

import (
	"github.com/spate-dev/spate/experiment"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type wordCounter struct{}

func (wordCounter) Count(s string) int { return len(strings.Fields(s)) }

func write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFormats(t *testing.T) {
	sharegpt := `[{"id":"a","conversations":[{"from":"human","value":"What is Go?"},{"from":"gpt","value":"A programming language."},{"from":"human","value":"Who made it?"},{"from":"gpt","value":"Google."}]},
 {"id":"b","conversations":[{"from":"gpt","value":"skipped: starts with the model"}]}]`
	batch := `{"custom_id":"r1","method":"POST","url":"/v1/chat/completions","body":{"model":"x","messages":[{"role":"user","content":"Hello"}],"max_tokens":7}}
{"custom_id":"r2","method":"POST","url":"/v1/completions","body":{"model":"x","prompt":"Once","max_completion_tokens":3}}`
	csvText := "prompt,max_tokens,intent,timestamp\n\"Hi, there\",5,greet,0\nBye,6,leave,250\n"
	for _, tc := range []struct {
		name, file, body string
		o                LoadOptions
		check            func(t *testing.T, d *Dataset)
	}{
		{"sharegpt first exchange", "sg.json", sharegpt, LoadOptions{Tokenizer: wordCounter{}}, func(t *testing.T, d *Dataset) {
			r, _ := d.Request(0)
			if d.Len() != 1 || r.Prompt != "What is Go?" || r.MaxTokens != 3 {
				t.Fatalf("%d requests, first %+v", d.Len(), r)
			}
		}},
		{"sharegpt turns", "sg.json", sharegpt, LoadOptions{Tokenizer: wordCounter{}, Turns: true}, func(t *testing.T, d *Dataset) {
			r, _ := d.Request(0)
			if len(r.Turns) != 2 || r.Turns[1].Prompt != "Who made it?" || r.Turns[1].MaxTokens != 1 {
				t.Fatalf("turns %+v", r.Turns)
			}
		}},
		{"batch", "in.jsonl", batch, LoadOptions{}, func(t *testing.T, d *Dataset) {
			r0, _ := d.Request(0)
			r1, _ := d.Request(1)
			if r0.Messages[0].Content != "Hello" || r0.MaxTokens != 7 || r1.Prompt != "Once" || r1.MaxTokens != 3 {
				t.Fatalf("%+v %+v", r0, r1)
			}
		}},
		{"csv with a timed trace", "d.csv", csvText, LoadOptions{}, func(t *testing.T, d *Dataset) {
			r0, _ := d.Request(0)
			if r0.Prompt != "Hi, there" || r0.MaxTokens != 5 || r0.Intent != "greet" {
				t.Fatalf("%+v", r0)
			}
			offs, ok, err := d.Offsets()
			if err != nil || !ok || len(offs) != 2 || offs[1] != 250*time.Millisecond {
				t.Fatalf("offsets %v %v %v", offs, ok, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := LoadFormat(write(t, tc.file, tc.body), tc.o)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, d)
		})
	}
}

func TestFormatErrors(t *testing.T) {
	for _, tc := range []struct{ file, body, want string }{
		{"d.csv", "text\nhello\n", `line 1: no "prompt" column`},
		{"d.csv", "prompt,max_tokens\nhi,lots\n", "line 2: max_tokens"},
		{"d.jsonl", `{"custom_id":"1","body":{"model":"x"}}`, "line 1: the body has no messages"},
		{"d.jsonl", "{\"prompt\":\"a\",\"timestamp\":5}\n{\"prompt\":\"b\"}\n", "a trace needs a timestamp on every line"},
		{"d.jsonl", "{\"prompt\":\"a\",\"timestamp\":50}\n{\"prompt\":\"b\",\"timestamp\":10}\n", "sort the trace by timestamp"},
		{"d.jsonl", `{"prompt":"a","labels":{"intent":"x"}}`, "line 1: labels"},
		{"d.jsonl", `{"prompt":"a","checks":[{"kind":"regex","value":"("}]}`, "line 1: checks"},
	} {
		p := write(t, tc.file, tc.body)
		_, err := Build(experiment.Workload{Dataset: p}, BuildOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s %q: error %v, want one naming the file and %q", tc.file, tc.body, err, tc.want)
		}
	}
}

func TestTraceSpeed(t *testing.T) {
	p := write(t, "trace.jsonl", "{\"prompt\":\"a\",\"timestamp\":1000}\n{\"prompt\":\"b\",\"timestamp\":1500}\n{\"prompt\":\"c\",\"timestamp\":3000}\n")
	b, err := Build(experiment.Workload{Dataset: p, Speed: 2}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{0, 250 * time.Millisecond, time.Second}
	for i, w := range want {
		if b.Offsets[i] != w {
			t.Fatalf("offsets %v, want %v", b.Offsets, want)
		}
	}
}

func TestDatasetLabelsAndChecks(t *testing.T) {
	p := write(t, "d.jsonl", `{"prompt":"a","labels":{"cluster":"c3","lang":"en"},"checks":[{"kind":"contains","value":"x"}]}`+"\n")
	d, err := LoadDataset(p)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := d.Request(0)
	if len(r.Labels) != 2 || r.Labels[0] != (Label{Key: "cluster", Value: "c3"}) || r.Checks == nil || !r.KeepAnswer {
		t.Fatalf("%+v", r)
	}
}
