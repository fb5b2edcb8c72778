package main

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/spate-dev/spate/sim"
)

// TestResilienceInRunResult runs spate against a steady deterministic
// server: every stage gets a resilience section whose P99 slope is near 0
// and which meets its SLO from the load step on.
func TestResilienceInRunResult(t *testing.T) {
	_, target := startSim(t, sim.Deterministic(50*time.Millisecond, 5*time.Millisecond, 10))
	out := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := cli(t, context.Background(), "run", "--target", target, "--model", "spate-sim", "--rate", "10",
		"--arrival", "constant", "--duration", "7s", "--output-tokens", "10", "--slo", "ttft=400ms", "--quiet", "--out", out,
		"--resilience-window", "3s", "--recovery-window", "2s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := readResult(t, out).Scenarios[0].Resilience
	if r == nil || r.TTFTp99SlopeMSPerS == nil || r.E2Ep99SlopeMSPerS == nil {
		t.Fatalf("resilience %+v", r)
	}
	t.Logf("slopes: ttft %.2f ms/s, e2e %.2f ms/s over %d windows; recoveries %+v", *r.TTFTp99SlopeMSPerS, *r.E2Ep99SlopeMSPerS, r.SlopeWindows, r.Recoveries)
	// A steady server: P99 moves by the client's jitter only.
	if math.Abs(*r.TTFTp99SlopeMSPerS) > 15 || r.SlopeWindows < 3 || r.SLOMetric != "ttft" || r.SLOms != 400 {
		t.Errorf("resilience %+v", r)
	}
	if len(r.Recoveries) != 1 || r.Recoveries[0].Event != "load_step" || !r.Recoveries[0].Recovered || r.Recoveries[0].RecoveryS != 0 {
		t.Errorf("recoveries %+v, want recovered at once after the load step", r.Recoveries)
	}
	if code, _, _ := cli(t, context.Background(), "run", "--target", target, "--resilience-window", "1s"); code != exitUsage {
		t.Errorf("--resilience-window 1s: exit %d, want 2", code)
	}
}
