package spate_test

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate"
	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/llmtest"
)

// TestTokensPerChunkAgreeWithUsage: against a server streaming 16 tokens
// in 12 chunks (every 4th chunk carries 3) whose tokens the local
// tokenizer counts three apiece (another vocabulary's pieces), tokens per
// chunk are the server's: mean 1.33, p50 1, max 3; and the console says
// how far usage and the tokenizer disagree.
func TestTokensPerChunkAgreeWithUsage(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{TTFT: 5 * time.Millisecond, ITL: time.Millisecond, Tokens: 16,
		ChunkTokens: []int{1, 1, 1, 3}, Word: "▁the"})
	defer srv.Close()
	var out bytes.Buffer
	res, err := spate.Run(context.Background(), &experiment.Experiment{
		Target: experiment.Target{URL: srv.BaseURL(), Model: "m"},
		Stages: []experiment.Stage{{Name: "main", Concurrency: 2, Requests: 20}},
		// Token counts are the subject, not timing (a busy machine reads
		// 1 ms-ITL streams late).
		Measurement: experiment.Measurement{AllowInvalid: true},
	}, spate.WithStdout(&out))
	if err != nil {
		t.Fatal(err)
	}
	sc := res.Scenarios[0]
	d := sc.Metrics["tokens_per_chunk"]
	if d.Count != 20*12 || math.Abs(d.Mean-16.0/12) > 0.01 || d.P50 != 1 || d.Max != 3 {
		t.Fatalf("tokens per chunk %+v: want 240 chunks, mean 1.33, p50 1, max 3", d)
	}
	if o := sc.Metrics["output_tokens"]; o.Min != 16 || o.Max != 16 || sc.Tokens.OutputSource != "usage" {
		t.Fatalf("output tokens %+v from %s", o, sc.Tokens.OutputSource)
	}
	// Every 16th request is counted both ways: 48 local tokens for 16.
	if sc.Tokens.Discrepancy == nil || math.Abs(*sc.Tokens.Discrepancy-2) > 0.01 {
		t.Fatalf("discrepancy %v, want 2 (200 %%)", sc.Tokens.Discrepancy)
	}
	if !strings.Contains(out.String(), "tokens     the server's usage and the cl100k_base tokenizer differ by 200.0 %") {
		t.Errorf("the console does not show the discrepancy:\n%s", out.String())
	}
}

// TestNormalisedTokensEqualPlainTokens: a text-only workload whose lengths
// are known (synthetic prompts and a generated system prompt) has as many
// normalised tokens per second as plain ones: each text counted once.
func TestNormalisedTokensEqualPlainTokens(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{TTFT: 5 * time.Millisecond, ITL: time.Millisecond, Tokens: 4, NoUsage: true})
	defer srv.Close()
	res, err := spate.Run(context.Background(), &experiment.Experiment{
		Target: experiment.Target{URL: srv.BaseURL(), Model: "m"},
		Workload: experiment.Workload{InputTokens: "100", OutputTokens: "4",
			SystemPrompt: &experiment.Text{Tokens: 30}},
		Stages: []experiment.Stage{{Name: "main", Concurrency: 2, Requests: 10}},
		// Token counts are the subject, not timing.
		Measurement: experiment.Measurement{AllowInvalid: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	sc := res.Scenarios[0]
	tp := sc.Throughput
	if in := sc.Metrics["input_tokens"]; in.Min != 130 || in.Max != 130 {
		t.Fatalf("input tokens %+v, want 130 a request (100 of prompt, 30 of system prompt)", in)
	}
	if tp.NormalizedTokensPerS == 0 || math.Abs(tp.NormalizedTokensPerS-tp.TotalTokensPerS) > 1e-6*tp.TotalTokensPerS {
		t.Fatalf("normalised %v tok/s, plain %v tok/s: want them equal", tp.NormalizedTokensPerS, tp.TotalTokensPerS)
	}
}
