package sim

import (
	"context"
	"testing"
)

// TestWordsAreOneCl100kToken checks that every vocabulary word is one
// cl100k_base token with its leading space, and that generated text of any
// length encodes to exactly one token per word (the pre-tokeniser never
// merges two words), so a client counting with cl100k gets usage exactly.
func TestWordsAreOneCl100kToken(t *testing.T) {
	enc := cl100k(t)
	v := newVocab()
	if len(v.words) < 300 {
		t.Errorf("only %d words", len(v.words))
	}
	seen := map[string]bool{}
	for _, w := range v.words {
		if seen[string(w)] {
			t.Errorf("duplicate word %q", w)
		}
		seen[string(w)] = true
		if n := len(enc.Encode(string(w), nil, nil)); n != 1 {
			t.Errorf("%q is %d cl100k tokens", w, n)
		}
	}
	for seed := range uint64(5) {
		text := string(v.appendText(nil, seed, 3000))
		if n := len(enc.Encode(text, nil, nil)); n != 3000 {
			t.Errorf("3,000 generated words (seed %d) encode to %d tokens", seed, n)
		}
	}
}

// TestStreamTokensMatchUsage counts a real stream's text with cl100k.
func TestStreamTokensMatchUsage(t *testing.T) {
	enc := cl100k(t)
	_, url := startServer(t, Deterministic(0, 0, 257))
	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		body := chatBody("count me", "")
		if path == "/v1/completions" {
			body = `{"prompt":"count me","stream":true,"stream_options":{"include_usage":true}}`
		}
		r := streamRequest(context.Background(), newClient(1), url+path, body)
		if r.usage == nil {
			t.Fatalf("%s: no usage (status %d, err %v)", path, r.status, r.readErr)
		}
		if n := len(enc.Encode(r.text, nil, nil)); n != r.usage.CompletionTokens || n != 257 {
			t.Errorf("%s: text encodes to %d cl100k tokens, usage says %d", path, n, r.usage.CompletionTokens)
		}
	}
}
