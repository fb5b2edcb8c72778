package capacity

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/longtest"
	"github.com/spate-dev/spate/result"
)

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

// variedOutcome is one seed of TestVariedServiceTime's server: the search
// on it, and, when the search reported a rate, the goodput of 30 s at that
// rate pooled over 200 runs (and the share of runs at target alone).
type variedOutcome struct {
	c             *result.Capacity
	pooled, alone float64
}

// searchVaried searches the varied server of seed (10 s trials) and, when
// the search reports a rate, confirms it over 200 simulated 30 s runs.
func searchVaried(t *testing.T, seed uint64, target float64) variedOutcome {
	t.Helper()
	q := &queue{Slots: 4, Service: 200 * time.Millisecond, CV: 0.4, SLO: 500 * time.Millisecond, Duration: 10 * time.Second,
		rng: rand.New(rand.NewPCG(seed, 41))}
	out, err := Search(context.Background(), q.trial, Config{Criteria: q.criteria(), MinRate: 2, MaxRate: 64})
	if err != nil {
		t.Fatal(err)
	}
	o := variedOutcome{c: out.Capacity}
	if o.c.Inconclusive == "" {
		q.rng = rand.New(rand.NewPCG(seed, 42))
		o.pooled, o.alone = q.confirm(o.c.RateRPS, 30, 200, target)
	}
	return o
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
// Near the knee a 10 s trial's goodput is skewed — most trials a little
// over the target, a burst of slow service taking a few far under it — so
// a rate whose 30 s goodput is 93 % passes two trials in three, and three
// passes in a row come often enough; judged on its own trials, 6 of these
// 20 searches reported such a rate (15 to 17.5 req/s, 80 to 95 % over
// 30 s). A rate now passes only when its trials' goodput, with that of the
// trials up to 11 % above it, is surely at the target, their spread taken
// as at least the skew allows (goodputDecision). Measured: 2 of the 20 are
// inconclusive, the other 18 report 10.5 to 14 req/s (goodput ≥ 96.9 %
// over 30 s; 95 % over 30 s is lost at about 14.8 req/s); over seeds
// 1000-1199, none of 200 reports a rate under the target and 22 are
// inconclusive. It runs in about half a second on the simulated clock.
func TestVariedServiceTime(t *testing.T) {
	const target = 0.95
	bad, inconclusive := 0, 0
	for seed := range uint64(20) {
		o := searchVaried(t, seed, target)
		c, pooled, alone := o.c, o.pooled, o.alone
		if c.Inconclusive != "" {
			t.Logf("seed %2d: inconclusive (exit 4) after %d trials: %s", seed, len(c.Trials), c.Inconclusive)
			inconclusive++
			continue
		}
		t.Logf("seed %2d: capacity %5.4g req/s (passed %d of %d), bracket [%.4g, %.4g), %2d trials; 30 s at it: goodput %.4f pooled over 200 runs, %3.0f %% of the runs ≥ %.0f %%",
			seed, c.RateRPS, c.RateTrials[0], c.RateTrials[1], c.LowRPS, c.HighRPS, len(c.Trials), pooled, 100*alone, 100*target)
		if pooled < target {
			bad++
			t.Errorf("seed %d: capacity %.4g req/s completes %.4f of its requests within the SLO over 30 s, want ≥ %.2f", seed, c.RateRPS, pooled, target)
		}
	}
	t.Logf("%d of 20 searches reported a rate that misses the target over 30 s, %d inconclusive", bad, inconclusive)
	// Refusing to judge is a failure of its own: measured 2.
	if inconclusive > 4 {
		t.Errorf("%d of 20 searches inconclusive, want at most 4", inconclusive)
	}
}

// TestVariedServiceTimeMany holds TestVariedServiceTime over 200 other
// seeds (1000-1199; with -tags integration only, seconds of CPU): none
// reports a rate under the target over 30 s, and few are inconclusive
// (measured: 22 of 200).
func TestVariedServiceTimeMany(t *testing.T) {
	if !longtest.On {
		t.Skip("runs with -tags integration")
	}
	const target = 0.95
	bad, inconclusive := 0, 0
	for seed := uint64(1000); seed < 1200; seed++ {
		o := searchVaried(t, seed, target)
		switch {
		case o.c.Inconclusive != "":
			inconclusive++
		case o.pooled < target:
			bad++
			t.Errorf("seed %d: capacity %.4g req/s completes %.4f of its requests within the SLO over 30 s, want ≥ %.2f", seed, o.c.RateRPS, o.pooled, target)
		}
	}
	t.Logf("%d of 200 searches reported a rate that misses the target over 30 s, %d inconclusive", bad, inconclusive)
	if inconclusive > 30 {
		t.Errorf("%d of 200 searches inconclusive, want at most 30", inconclusive)
	}
}
