//go:build integration

package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/verdict/capacity"
	"github.com/spate-dev/spate/result"
	"github.com/spate-dev/spate/sim"
)

// TestCapacityFindsFourSlots: a server that serves at most 4 requests at
// once, for 200 ms each (capacity 20 req/s); 3 s trials find it within
// 15 %, the bracket's ends decided by repeated trials, and the confidence
// interval (from the pass/fail of every trial) overlaps it. The issue's
// search printed a "95 %" interval [20.82, 21.01] that left 20 out.
func TestCapacityFindsFourSlots(t *testing.T) {
	ctx := context.Background()
	target := slotServer(t, 4, 200*time.Millisecond)
	out := filepath.Join(t.TempDir(), "capacity.json")
	code, stdout, stderr := cli(t, ctx, "capacity", "--target", target, "--api", "http", "--arrival", "constant", "--lag-bound", "100ms",
		"--min-rate", "10", "--max-rate", "40", "--resolution", "0.1", "--trial-duration", "3s", "--out", out)
	t.Logf("spate capacity:\n%s", stdout)
	skipIfTooBusy(t, code, stdout)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	c := readResult(t, out).Capacity
	if c.RateRPS < 17 || c.RateRPS > 23 {
		t.Errorf("capacity %.4g req/s, want 20 ± 15 %%", c.RateRPS)
	}
	if iv := c.Interval; iv == nil {
		t.Errorf("no interval: %v", c.Warnings)
	} else if iv.HighRPS < 17 || iv.LowRPS > 23 || iv.LowRPS > iv.EstimateRPS || iv.EstimateRPS > iv.HighRPS {
		t.Errorf("interval [%.4g, %.4g] estimate %.4g, want one overlapping 20 ± 15 %%", iv.LowRPS, iv.HighRPS, iv.EstimateRPS)
	}
}

// TestCapacityEngineSimKeepsUp: against the engine simulator (small-gpu,
// 1,024-token prompts, no SLO: every success counts), the capacity found
// with 10 s trials (its requests take seconds under load: shorter trials
// cannot tell) is at most 1.1 × what
// the server completes at that load, measured by a separate 8 s run (the
// issue's search reported 32 req/s for a server that completed 7.25).
func TestCapacityEngineSimKeepsUp(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	load := []string{"--model", "spate-sim", "--input-tokens", "1024", "--output-tokens", "16", "--arrival", "constant", "--lag-bound", "100ms"}
	out := filepath.Join(dir, "capacity.json")
	args := append([]string{"capacity", "--target", smallGPU(t), "--min-rate", "2", "--max-rate", "64", "--resolution", "0.1",
		"--trial-duration", "10s", "--confirm", "0", "--out", out}, load...)
	code, stdout, stderr := cli(t, ctx, args...)
	t.Logf("spate capacity:\n%s", stdout)
	skipIfTooBusy(t, code, stdout)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	c := readResult(t, out).Capacity
	if c.RateRPS <= 0 {
		t.Fatalf("capacity %+v", c)
	}
	run := filepath.Join(dir, "at-capacity.json")
	args = append([]string{"run", "--target", smallGPU(t), "--rate", strconv.FormatFloat(c.RateRPS, 'g', -1, 64), "--duration", "8s",
		"--quiet", "--out", run}, load...)
	if code, _, e := cli(t, ctx, args...); code != 0 {
		t.Fatalf("run at the capacity: exit %d: %s", code, e)
	}
	sc := readResult(t, run).Scenarios[0]
	a := capacity.Assess(&sc, c.RateRPS, capacity.Criteria{Duration: 8 * time.Second})
	t.Logf("capacity %.4g req/s; at that load for 8 s the server completed %.3g req/s (%.0f %% of the sends)", c.RateRPS, a.CompletedRPS, 100*a.Delivered)
	if c.RateRPS > 1.1*a.CompletedRPS {
		t.Errorf("capacity %.4g req/s is more than 1.1 × the %.3g req/s completed at that load", c.RateRPS, a.CompletedRPS)
	}
}

// skipIfTooBusy skips a capacity test whose search ended inconclusive
// because the machine was too busy for the generator to keep its schedule
// even within --lag-bound: that is the search saying it cannot measure,
// rightly, not a wrong capacity.
func skipIfTooBusy(t *testing.T, code int, stdout string) {
	t.Helper()
	if code == exitInvalid && strings.Contains(stdout, "could not keep the schedule") {
		t.Skipf("the machine was too busy to measure (every try of a rate was invalid)")
	}
}

// capacityTrialArgs are the run flags of every trial in the capacity
// tests: trials against the small-gpu engine, whose prefill of 1,024-token
// prompts (150 µs a token) makes it saturate near 7 req/s, a load the
// client sends with ease on a busy machine; 8 s long, since requests take
// seconds near the capacity and a shorter trial cannot tell.
var capacityTrialArgs = []string{"--model", "spate-sim", "--slo", "ttft=1s", "--input-tokens", "1024",
	"--output-tokens", "16", "--arrival", "constant", "--warmup", "500ms", "--lag-bound", "100ms"}

const capacityTrialDuration = "8s"

// smallGPU serves the small-gpu preset for the test, without prefix
// caching, so that what one trial sent does not speed up the next.
func smallGPU(t *testing.T) string {
	t.Helper()
	cfg, err := sim.Preset("small-gpu")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Engine.PrefixCaching = false
	_, target := startSim(t, cfg)
	return target
}

// TestCapacitySearchFindsTheKnee runs spate capacity against the
// simulator's engine mode and checks that it lands within 10 % of the
// knee of a dense sweep: the highest rate, of rates 1 req/s apart, that
// passes the same trial verdict (capacity.Judge: capacity.Knee's condition
// — valid, some success, goodput ≥ target — plus the rate delivered and
// TTFT not growing), below the first rate that fails. The sweep's trials
// run one after the other against a second simulator.
func TestCapacitySearchFindsTheKnee(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	// The search, through the command.
	out := filepath.Join(dir, "capacity.json")
	args := append([]string{"capacity", "--target", smallGPU(t), "--goodput", "0.9", "--min-rate", "2", "--max-rate", "64",
		"--trial-duration", capacityTrialDuration, "--resolution", "0.08", "--seed", "1", "--confirm", "0", "--out", out}, capacityTrialArgs...)
	code, stdout, stderr := cli(t, ctx, args...)
	skipIfTooBusy(t, code, stdout)
	if code != 0 {
		t.Fatalf("capacity: exit %d: %s\n%s", code, stderr, stdout)
	}
	t.Logf("spate capacity:\n%s", stdout)
	res := readResult(t, out)
	c := res.Capacity
	if c == nil || c.Method != "adaptive" || len(res.Scenarios) != len(c.Trials) || c.RateRPS <= 0 || c.HighRPS <= c.RateRPS {
		t.Fatalf("capacity %+v with %d scenarios", c, len(res.Scenarios))
	}
	if c.Resolution > 0.08 || len(res.Histograms) != len(res.Scenarios) {
		t.Errorf("resolution %v, %d histograms for %d scenarios", c.Resolution, len(res.Histograms), len(res.Scenarios))
	}

	// The dense sweep, on its own simulator: rising rates 2 req/s apart
	// from 4
	// until one fails, then 0.5 req/s (≈ 7 %) apart from the last that
	// passed; each trial with its own seed, as the search's.
	target := smallGPU(t)
	var rates []float64
	var scs []*result.Scenario
	try := func(r float64) bool {
		path := filepath.Join(dir, fmt.Sprintf("sweep-%02d.json", len(rates)))
		a := append([]string{"run", "--target", target, "--rate", strconv.FormatFloat(r, 'g', -1, 64),
			"--duration", capacityTrialDuration, "--out", path, "--quiet", "--seed", strconv.Itoa(100 + len(rates))}, capacityTrialArgs...)
		if code, _, e := cli(t, ctx, a...); code != 0 && code != exitThreshold {
			t.Fatalf("sweep at %v req/s: exit %d: %s", r, code, e)
		}
		res := readResult(t, path)
		rates, scs = append(rates, r), append(scs, &res.Scenarios[0])
		pass, _ := capacity.Judge(scs[len(scs)-1], r, capacity.Criteria{Goodput: 0.9})
		return pass
	}
	coarse := 0.0
	for r := 4.0; r <= 40 && try(r); r += 2 {
		coarse = r
	}
	for r := coarse + 0.5; r < coarse+2 && try(r); r += 0.5 {
	}
	// The knee: the highest passing rate below the lowest failing one.
	lowestFail := math.Inf(1)
	pass := make([]bool, len(rates))
	for i, r := range rates {
		var reason string
		pass[i], reason = capacity.Judge(scs[i], r, capacity.Criteria{Goodput: 0.9})
		t.Logf("sweep %5.2f req/s: goodput %.3f ttft p99 %7.1f ms %v %s", r, scs[i].Goodput.Fraction, scs[i].Metrics["ttft_ms"].P99, pass[i], reason)
		if !pass[i] {
			lowestFail = math.Min(lowestFail, r)
		}
	}
	knee := 0.0
	for i, r := range rates {
		if pass[i] && r < lowestFail {
			knee = math.Max(knee, r)
		}
	}
	if math.IsInf(lowestFail, 1) || knee == 0 {
		t.Fatalf("the sweep found no knee between 4 and 40 req/s (knee %v)", knee)
	}
	t.Logf("search: %.3g req/s in [%.3g, %.3g); dense-sweep knee %.3g req/s", c.RateRPS, c.LowRPS, c.HighRPS, knee)
	if math.Abs(c.RateRPS-knee)/knee > 0.10 {
		t.Errorf("search found %.3g req/s, the dense sweep's knee is %.3g: more than 10 %% apart", c.RateRPS, knee)
	}
}
