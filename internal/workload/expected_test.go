package workload

import (
	"sync/atomic"
	"testing"
)

func TestExpectedTokens(t *testing.T) {
	for _, tc := range []struct {
		name        string
		r           Request
		total, outp float64
	}{
		{"counted", Request{InputTokens: 100, MaxTokens: 50}, 150, 50},
		{"estimated", Request{Prompt: "abcdefgh", MaxTokens: 3}, 5, 3},
		{"no max_tokens", Request{InputTokens: 7}, 7, 0},
		{"conversation", Request{Messages: []Message{{Role: "system", Content: "abcd"}},
			Turns: []Turn{{Prompt: "x", InputTokens: 10, MaxTokens: 5}, {Prompt: "abcdefgh", MaxTokens: 4}}}, 1 + 10 + 5 + 2 + 4, 9},
	} {
		if got := ExpectedTokens(&tc.r, false); got != tc.total {
			t.Errorf("%s: total %v, want %v", tc.name, got, tc.total)
		}
		if got := ExpectedTokens(&tc.r, true); got != tc.outp {
			t.Errorf("%s: output %v, want %v", tc.name, got, tc.outp)
		}
	}
}

func TestMemoBuildsOnce(t *testing.T) {
	var calls atomic.Int64
	src := SourceFunc{Sha256: "d", F: func(n uint64) (*Request, error) {
		calls.Add(1)
		return &Request{MaxTokens: int(n)}, nil
	}}
	m := Memo(src)
	for n := uint64(0); n < 100; n++ {
		// The pacer reads n−1, the engine n: each built once.
		if n > 0 {
			if r, _ := m.Request(n - 1); r.MaxTokens != int(n-1) {
				t.Fatalf("request %d is %d", n-1, r.MaxTokens)
			}
		}
		if r, _ := m.Request(n); r.MaxTokens != int(n) {
			t.Fatalf("request %d is %d", n, r.MaxTokens)
		}
	}
	if c := calls.Load(); c != 100 {
		t.Errorf("%d builds for 100 requests", c)
	}
	if m.Digest() != "d" {
		t.Error("digest changed")
	}
}
