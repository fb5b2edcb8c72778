package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestEncodeMatchesTiktoken checks Encode's ids against tiktoken-go's
// EncodeOrdinary on short and long pieces of every vocabulary.
func TestEncodeMatchesTiktoken(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	texts := []string{"", "hello world", " the capital of France is Paris.", strings.Repeat("a", 500), strings.Repeat("ab", 300), "<|endoftext|> is text"}
	for i := 0; i < 20; i++ {
		texts = append(texts, randomText(r, 50+r.IntN(1500)))
	}
	for _, b := range vocabularies(t) {
		ref := reference(t, b)
		for i, text := range texts {
			got, want := b.Encode(text), ref.EncodeOrdinary(text)
			if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("%s, text %d (%.40q…): %d ids, tiktoken-go %d; first differ at %d", b.name, i, text, len(got), len(want), firstDiff(got, want))
			}
		}
	}
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
