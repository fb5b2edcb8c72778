package workload

import (
	"strings"
	"testing"

	"github.com/spate-dev/spate/internal/workload/tokenizer"
)

// TestOneTokenWordsInEveryTokenizer checks synthetic prompts are exact in
// each shipped tokenizer, and that a prompt of n words is n tokens.
func TestOneTokenWordsInEveryTokenizer(t *testing.T) {
	for _, name := range []string{"cl100k_base", "o200k_base", "llama3"} {
		tok, err := tokenizer.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckVocab(tok, name); err != nil {
			t.Error(err)
		}
		s := Synthetic{Input: mustLengths(t, "uniform:1:500"), Seed: 3}
		for n := uint64(0); n < 20; n++ {
			r, _ := s.Request(n)
			if got := tok.Count(r.Prompt); got != r.InputTokens {
				t.Fatalf("%s: request %d has %d tokens, asked %d", name, n, got, r.InputTokens)
			}
		}
	}
	if err := CheckVocab(wordCounter{}, "words"); err != nil {
		t.Fatal(err) // one word each: passes
	}
	if err := CheckVocab(charCounter{}, "chars"); err == nil || !strings.Contains(err.Error(), "tokenizer chars") {
		t.Fatalf("a tokenizer that splits words was accepted: %v", err)
	}
}

type charCounter struct{}

func (charCounter) Count(s string) int { return len(s) }
