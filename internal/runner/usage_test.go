package runner

import (
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/verdict/threshold"
)

// TestAbortStepDoubted: an abort threshold on output_tps aborts a stage
// whose 128 tokens a response the tokenizer confirms (100 counted, another
// vocabulary) fall short of it, and does not abort one whose usage claims
// 128 tokens for 1 streamed: its output_tps is no figure to stop a run on.
func TestAbortStepDoubted(t *testing.T) {
	th, err := threshold.Parse("output_tps > 1000")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name    string
		counted int
		abort   bool
	}{
		{"honest", 100, true},
		{"liar", 1, false},
	} {
		rec := metrics.New(metrics.Config{Start: start, Mode: "closed", Concurrency: 1, Tokenizer: "cl100k_base", Window: 10 * time.Second})
		for i := range 3 {
			r := &record.Record{}
			r.Reset()
			r.Seq = uint64(i)
			r.Intended = start.Add(time.Duration(i) * time.Second)
			r.Sent = r.Intended
			r.FirstToken = r.Sent.Add(10 * time.Millisecond)
			r.End = r.FirstToken.Add(10 * time.Millisecond)
			r.Chunks, r.UsageTokens, r.OutputTokens, r.OutputSource, r.TokenizerTokens = 1, 128, 128, record.TokensUsage, tc.counted
			rec.Sent(r.Sent, r.Intended, false)
			rec.Record(r)
		}
		got := abortStep(start.Add(4*time.Second), start, []Abort{{Threshold: th, Window: 3 * time.Second}}, rec)
		if (got != nil) != tc.abort {
			t.Errorf("%s: abort %+v, want %v", tc.name, got, tc.abort)
		}
	}
}
