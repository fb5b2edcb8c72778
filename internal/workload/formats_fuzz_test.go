package workload

import (
	"testing"
)

// checkDataset fails when a dataset that read without error gives a
// request it should not have.
func checkDataset(t *testing.T, d *Dataset, err error) {
	t.Helper()
	if err != nil {
		return
	}
	for i := 0; i < d.Len(); i++ {
		r, err := d.Request(uint64(i))
		if err != nil || r.MaxTokens < 0 {
			t.Fatalf("request %d: %+v %v", i, r, err)
		}
		for _, turn := range r.Turns {
			if turn.MaxTokens < 0 {
				t.Fatalf("request %d: turn %+v", i, turn)
			}
		}
	}
	if _, _, err := d.Offsets(); err != nil {
		return
	}
}

// small limits, so that the fuzzer reaches the limit checks too.
var fuzzLimits = Limits{FileSize: 1 << 20, LineSize: 512}

func FuzzReadCSV(f *testing.F) {
	f.Add([]byte("prompt,max_tokens,intent,timestamp\n\"Hi, there\",5,greet,0\nBye,6,leave,250\n"), "")
	f.Add([]byte("prompt\n\"never closed\n"), "") // panicked: FieldPos before the error check
	f.Add([]byte("q;x\n\"a\"\"b\",1\n"), "q")
	f.Add([]byte("\ufeffPrompt,output_tokens\nhello,-1\n"), "")
	f.Fuzz(func(t *testing.T, b []byte, column string) {
		d, err := readCSV(b, "f.csv", column, fuzzLimits)
		checkDataset(t, d, err)
	})
}

func FuzzReadShareGPT(f *testing.F) {
	f.Add([]byte(`[{"id":"a","conversations":[{"from":"human","value":"What is Go?"},{"from":"gpt","value":"A language."}]}]`), false)
	f.Add([]byte(`{"conversations":[{"from":"user","value":"a"},{"from":"gpt","value":"b c"},{"from":"human","value":"d"}]}`+"\n{}\n"), true)
	f.Add([]byte(`[{"conversations":[{"from":"gpt","value":"x"}]}, {"conversations":null}]`), true)
	f.Fuzz(func(t *testing.T, b []byte, turns bool) {
		d, err := readShareGPT(b, "f.json", LoadOptions{Tokenizer: wordCounter{}, Turns: turns, Limits: fuzzLimits})
		checkDataset(t, d, err)
	})
}

func FuzzReadBatch(f *testing.F) {
	f.Add([]byte(`{"custom_id":"r1","method":"POST","url":"/v1/chat/completions","body":{"model":"x","messages":[{"role":"user","content":"Hello"}],"max_tokens":7}}`))
	f.Add([]byte(`{"custom_id":"r2","body":{"prompt":"Once","max_completion_tokens":3}}` + "\n" + `{"custom_id":"r3","body":{"input":"x","max_tokens":-4}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := readBatch(b, "f.jsonl", fuzzLimits)
		checkDataset(t, d, err)
	})
}
