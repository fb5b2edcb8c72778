package main

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

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
	for _, stream := range []string{"true", "false"} {
		out := filepath.Join(t.TempDir(), "r.json")
		code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", srv.URL+"/v1", "--api", "responses", "--stream="+stream,
			"--input-tokens", "16", "--output-tokens", "8", "--concurrency", "2", "--requests", "12", "--out", out, "--progress", "0", "--quiet")
		if code != 0 {
			t.Fatalf("stream=%s: exit %d\n%s\n%s", stream, code, stdout, stderr)
		}
		sc := readResult(t, out).Scenarios[0]
		if sc.Requests.Succeeded != 12 || sc.Tokens.Output != 12*8 || sc.Tokens.OutputSource != "usage" {
			t.Fatalf("stream=%s: %d of 12 ok, %d output tokens from %s, want 96 from usage", stream, sc.Requests.Succeeded, sc.Tokens.Output, sc.Tokens.OutputSource)
		}
		e2e := sc.Metrics["e2e_ms"].P50
		if e2e < 99.5 || e2e > 120 {
			t.Errorf("stream=%s: E2E p50 %.2f ms, want 100 (30 + 7 × 10, +20)", stream, e2e)
		}
		if stream == "false" {
			continue
		}
		if p50 := sc.Metrics["ttft_ms"].P50; p50 < 29.5 || p50 > 45 {
			t.Errorf("TTFT p50 %.2f ms, want 30 (+15)", p50)
		}
		if p50 := sc.Metrics["itl_ms"].P50; p50 < 9 || p50 > 16 {
			t.Errorf("ITL p50 %.2f ms, want 10 (-1, +6)", p50)
		}
	}
}
