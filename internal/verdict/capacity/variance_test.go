package capacity

import (
	"context"
	"flag"
	"math/rand/v2"
	"testing"
	"time"
)

// openRequirement runs TestVariedServiceTime, which holds the product
// owner's open requirement and fails today (see its comment):
// go test ./internal/verdict/capacity -run TestVariedServiceTime -args -open-requirement
var openRequirement = flag.Bool("open-requirement", false, "run TestVariedServiceTime, the open requirement that fails today")

// confirm is the goodput of runs secs long at rate on q: the requests
// completed within its SLO over those sent, pooled over runs runs each
// from an idle server, and the fraction of the runs that met target on
// their own.
func (q *queue) confirm(rate float64, secs, runs int, target float64) (pooled, alone float64) {
	good, sent, met := 0, 0, 0
	for range runs {
		arrive, done := q.simulate(rate, secs)
		g := q.good(arrive, done)
		good, sent = good+g, sent+len(arrive)
		if float64(g) >= target*float64(len(arrive)) {
			met++
		}
	}
	return float64(good) / float64(sent), float64(met) / float64(runs)
}

// TestVariedServiceTime is the product owner's requirement: against a
// server whose service time varies as a real one's does — 4 slots, each
// request served for a lognormal time of mean 200 ms and coefficient of
// variation 0.4, a 500 ms SLO on its E2E (its TTFT too), so that goodput
// falls off gradually near the knee rather than as a cliff — the search
// (10 s trials, goodput ≥ 95 %) either ends inconclusive (exit 4) or
// reports a rate at which 30 s of load completes at least 95 % of what it
// sends within the SLO (pooled over 200 such runs: one run's goodput
// scatters around it). Everything runs on the queue's simulated clock.
//
// It fails today, so it runs only when asked (-open-requirement): near
// the knee a 10 s trial's goodput is skewed — most trials a little over
// the target, a burst of slow service taking a few far under it — so a
// rate whose 30 s goodput is 93 % passes two trials in three, and three
// passes in a row (the sequential test's decision) come often enough.
// goodputDecision stops a rate whose failed trials fell far short, not
// one whose trials all happened to pass.
func TestVariedServiceTime(t *testing.T) {
	if !*openRequirement {
		t.Skip("the open requirement: fails today; run with -args -open-requirement")
	}
	const target = 0.95
	bad := 0
	for seed := range uint64(20) {
		q := &queue{Slots: 4, Service: 200 * time.Millisecond, CV: 0.4, SLO: 500 * time.Millisecond, Duration: 10 * time.Second,
			rng: rand.New(rand.NewPCG(seed, 41))}
		out, err := Search(context.Background(), q.trial, Config{Criteria: q.criteria(), MinRate: 2, MaxRate: 64})
		if err != nil {
			t.Fatal(err)
		}
		c := out.Capacity
		if c.Inconclusive != "" {
			t.Logf("seed %2d: inconclusive (exit 4) after %d trials: %s", seed, len(c.Trials), c.Inconclusive)
			continue
		}
		q.rng = rand.New(rand.NewPCG(seed, 42))
		pooled, alone := q.confirm(c.RateRPS, 30, 200, target)
		t.Logf("seed %2d: capacity %5.4g req/s (passed %d of %d), bracket [%.4g, %.4g), %2d trials; 30 s at it: goodput %.4f pooled over 200 runs, %3.0f %% of the runs ≥ %.0f %%",
			seed, c.RateRPS, c.RateTrials[0], c.RateTrials[1], c.LowRPS, c.HighRPS, len(c.Trials), pooled, 100*alone, 100*target)
		if pooled < target {
			bad++
			t.Errorf("seed %d: capacity %.4g req/s completes %.4f of its requests within the SLO over 30 s, want ≥ %.2f", seed, c.RateRPS, pooled, target)
		}
	}
	t.Logf("%d of 20 searches reported a rate that misses the target over 30 s", bad)
}
