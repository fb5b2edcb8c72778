package tokenizer

import (
	"strings"
	"testing"
)

func TestCL100K(t *testing.T) {
	tok, err := CL100K()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		{" the of and", 3},
		{"tiktoken is great!", 6},
		{"<|endoftext|>", 7}, // counted as text, not as the special token
	}
	for _, tc := range tests {
		if got := tok.Count(tc.text); got != tc.want {
			t.Errorf("Count(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
	if tok.Name() != "cl100k_base" {
		t.Errorf("Name() = %q", tok.Name())
	}
}

func BenchmarkCount(b *testing.B) {
	tok, err := CL100K()
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat(" the quick brown fox jumps over the lazy dog", 14) // 126 tokens
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		tok.Count(text)
	}
}
