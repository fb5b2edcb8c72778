package workload

import (
	"strings"
	"testing"
)

// FuzzMooncake checks the Mooncake trace reader on hostile files: it must
// not panic; an error names the file; an accepted row's prompt made of hash
// ids has input_length words, and reading the file again gives the same
// prompts (the blocks depend on the seed and the ids only).
func FuzzMooncake(f *testing.F) {
	for _, s := range []string{
		`{"timestamp": 0, "input_length": 40, "output_length": 5, "hash_ids": [0, 1, 2]}`,
		"{\"input_length\": 16, \"hash_ids\": [0]}\n{\"input_length\": 17, \"hash_ids\": [0, 9]}\n",
		"{\"session_id\": \"a\", \"timestamp\": 1, \"input_length\": 3}\n{\"session_id\": \"a\", \"delay\": 5, \"text_input\": \"hi\"}\n",
		`{"session_id": 7, "input_length": 3, "output_length": -1}`,
		`{"input_length": 99999999}`,
		`{"input_length": 5, "hash_ids": [1, 2]}`,
		"not json\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o := LoadOptions{BlockSize: 16, Seed: 3}
		d, err := readMooncake(data, "fuzz.jsonl", o)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.jsonl") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		again, err := readMooncake(data, "fuzz.jsonl", o)
		if err != nil || len(again.reqs) != len(d.reqs) {
			t.Fatalf("read again: %v, %d requests vs %d", err, len(again.reqs), len(d.reqs))
		}
		for i, r := range d.reqs {
			turns := r.Turns
			if len(turns) == 0 {
				turns = []Turn{{Prompt: r.Prompt, InputTokens: r.InputTokens, MaxTokens: r.MaxTokens}}
			}
			for k, tu := range turns {
				if tu.InputTokens > 0 && len(strings.Fields(tu.Prompt)) != tu.InputTokens {
					t.Fatalf("request %d turn %d: %d words, want input_length %d", i, k, len(strings.Fields(tu.Prompt)), tu.InputTokens)
				}
				if tu.MaxTokens < 0 || tu.Think < 0 {
					t.Fatalf("request %d turn %d: %+v", i, k, tu)
				}
			}
			if again.reqs[i].Prompt != r.Prompt {
				t.Fatalf("request %d differs when read again", i)
			}
		}
	})
}
