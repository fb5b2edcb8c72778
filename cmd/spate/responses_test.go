package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/jitter"
	"github.com/spate-dev/spate/sim"
)

// TestResponsesRun drives the simulator's /v1/responses (TTFT 30 ms, a
// token every 10 ms, 8 tokens): TTFT, ITL and tokens come out of the
// Responses events as they do out of chat chunks.
func TestResponsesRun(t *testing.T) {
	s, err := sim.New(sim.Deterministic(30*time.Millisecond, 10*time.Millisecond, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	// The medians are judged on the best of a few rounds, each widened by
	// the timer lateness the machine showed meanwhile (package jitter): a
	// stall of a busy machine falls in one round (E2E p50 124 and 149 ms
	// seen, three suites at once), a wrong figure in all.
	for _, stream := range []string{"true", "false"} {
		jitter.BestOf(t, func() []string {
			out := filepath.Join(t.TempDir(), "r.json")
			probe := jitter.Start(time.Millisecond)
			code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", srv.URL+"/v1", "--api", "responses", "--stream="+stream,
				"--input-tokens", "16", "--output-tokens", "8", "--concurrency", "2", "--requests", "12", "--out", out, "--progress", "0", "--quiet")
			late := probe.Stop()
			if code != 0 {
				t.Fatalf("stream=%s: exit %d\n%s\n%s", stream, code, stdout, stderr)
			}
			sc := readResult(t, out).Scenarios[0]
			if sc.Requests.Succeeded != 12 || sc.Tokens.Output != 12*8 || sc.Tokens.OutputSource != "usage" {
				t.Fatalf("stream=%s: %d of 12 ok, %d output tokens from %s, want 96 from usage", stream, sc.Requests.Succeeded, sc.Tokens.Output, sc.Tokens.OutputSource)
			}
			// Nothing comes sooner than the server's schedule; a busy
			// machine only makes it later.
			var problems []string
			check := func(what string, got, want, below, above float64) {
				if got < want-below {
					t.Errorf("stream=%s: %s %.2f ms, want %g: sooner than the server sent it", stream, what, got, want)
				}
				if hi := want + above + 2*float64(late.Median)/float64(time.Millisecond); got > hi {
					problems = append(problems, fmt.Sprintf("stream=%s: %s %.2f ms, want %g (at most %.2f; %v)", stream, what, got, want, hi, late))
				}
			}
			check("E2E p50", sc.Metrics["e2e_ms"].P50, 100, 0.5, 20) // 30 + 7 × 10
			if stream == "true" {
				check("TTFT p50", sc.Metrics["ttft_ms"].P50, 30, 0.5, 15)
				check("ITL p50", sc.Metrics["itl_ms"].P50, 10, 1, 6)
			}
			return problems
		})
	}
}
