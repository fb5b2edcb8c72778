package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/llmtest"
)

// TestUntrustedUsageCannotJudge: a server that streams one word and
// claims 128 output tokens in every response's usage made a valid green
// (15,046 output tok/s, TPOT 0.1 ms). Now its usage is untrusted (every
// response counted both ways claims over twice the tokenizer's count):
// the tokens line says so, thresholds on output_tps and TPOT cannot be
// judged (exit 4) while one on TTFT still is, and a failed threshold
// beside them wins (exit 3). An honest server whose vocabulary counts 30 %
// more tokens than cl100k (52 claimed for 40 streamed) stays trusted:
// exit 0.
func TestUntrustedUsageCannotJudge(t *testing.T) {
	liar := llmtest.NewServer(llmtest.Config{TTFT: 5 * time.Millisecond, Tokens: 1, Claim: 128})
	defer liar.Close()
	honest := llmtest.NewServer(llmtest.Config{TTFT: 5 * time.Millisecond, ITL: time.Millisecond, Tokens: 40, Claim: 52})
	defer honest.Close()
	for _, tc := range []struct {
		name    string
		srv     *llmtest.Server
		extra   []string
		code    int
		trusted bool
	}{
		{"liar", liar, nil, exitInvalid, false},
		{"liar with a failed threshold", liar, []string{"--threshold", "p50(ttft) < 1us"}, exitThreshold, false},
		{"honest, another vocabulary", honest, nil, exitOK, true},
	} {
		out := filepath.Join(t.TempDir(), "r.json")
		args := append([]string{"run", "--target", tc.srv.BaseURL(), "--model", "x", "--concurrency", "4", "--requests", "32",
			"--threshold", "output_tps > 10", "--threshold", "p99(tpot) < 50ms", "--threshold", "p99(ttft) < 10s",
			"--allow-invalid", "--progress", "0", "--out", out}, tc.extra...)
		code, stdout, stderr := cli(t, context.Background(), args...)
		if code != tc.code {
			t.Fatalf("%s: exit %d, want %d\n%s\n%s", tc.name, code, tc.code, stdout, stderr)
		}
		sc := readResult(t, out).Scenarios[0]
		if tr := sc.Tokens.UsageTrusted; tr == nil || *tr != tc.trusted {
			t.Fatalf("%s: usage_trusted %v, want %v (tokens %+v)", tc.name, tr, tc.trusted, sc.Tokens)
		}
		untrusted := strings.Contains(stdout, "tokens     UNTRUSTED usage: 2 of 2 responses counted both ways claimed over 2× the output tokens the cl100k_base tokenizer counts")
		if untrusted == tc.trusted {
			t.Errorf("%s: the tokens line says untrusted %v, want %v:\n%s", tc.name, untrusted, !tc.trusted, stdout)
		}
		for i, o := range sc.Thresholds[:3] {
			doubted := i < 2 && !tc.trusted
			if o.Unjudged != doubted || (doubted && !strings.Contains(o.Err, "rests on the server's usage, untrusted: 2 of 2 responses")) {
				t.Errorf("%s: %s unjudged %v (%s), want %v", tc.name, o.Expr, o.Unjudged, o.Err, doubted)
			}
			if !doubted && !o.Pass {
				t.Errorf("%s: %s did not pass: %+v", tc.name, o.Expr, o)
			}
		}
	}
}
