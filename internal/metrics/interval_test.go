package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/result"
)

// TestIntervalsCoverTheTruth: over seeded stages drawn from a server with
// known behaviour — TTFT (and E2E) exponential with a 50 ms mean over a
// 20 ms floor, an SLO of 60 ms that a request meets with probability
// 1 − e^−0.8, Poisson arrivals at 50 req/s — the 95 % intervals of TTFT's
// p50, p90 and p99, of goodput and of the throughput hold the true values
// in about 95 % of the stages.
func TestIntervalsCoverTheTruth(t *testing.T) {
	const (
		stages = 300
		n      = 1000
		rate   = 50.0
		floor  = 20.0 // ms
		mean   = 50.0 // ms, of the exponential part
	)
	truth := map[float64]float64{} // TTFT's true percentiles, ms
	for _, p := range []float64{50, 90, 99} {
		truth[p] = floor - mean*math.Log(1-p/100)
	}
	covered := map[string]int{}
	counted := map[string]int{}
	for seed := range uint64(stages) {
		rng := rand.New(rand.NewPCG(seed, 11))
		start := time.Unix(1000, 0)
		slo := SLO{E2E: 60 * time.Millisecond}
		r := New(Config{Start: start, Mode: "open", TargetRate: rate, SLO: slo})
		at := start
		for range n {
			at = at.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
			r.Sent(at, at, false)
			ttft := time.Duration((floor + mean*rng.ExpFloat64()) * float64(time.Millisecond))
			rec := &record.Record{}
			rec.Reset()
			rec.Sent, rec.Intended = at, at
			rec.FirstToken = at.Add(ttft)
			rec.End = rec.FirstToken
			rec.OutputTokens, rec.Chunks, rec.OutputSource = 1, 1, record.TokensUsage
			r.Record(rec)
		}
		sc, _, err := r.Scenario("s", at.Add(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		iv := sc.Intervals
		if iv == nil {
			t.Fatal("no intervals")
		}
		for _, p := range []float64{50, 90, 99} {
			r := map[float64]*result.Range{50: iv.Metrics[TTFT].P50, 90: iv.Metrics[TTFT].P90, 99: iv.Metrics[TTFT].P99}[p]
			k := fmt.Sprintf("ttft p%v", p)
			counted[k]++
			// The histogram holds 3 significant digits.
			if want := truth[p]; r != nil && r.Low <= want*1.001 && want <= r.High*1.001 {
				covered[k]++
			}
		}
		counted["goodput"]++
		if g, want := iv.Goodput, 1-math.Exp(-0.8); g != nil && g.Low <= want && want <= g.High {
			covered["goodput"]++
		}
		// Throughput: the true rate of completions is the arrival rate.
		counted["throughput"]++
		if g := iv.RequestsPerS; g != nil {
			if g.Low <= rate && rate <= g.High {
				covered["throughput"]++
			}
		}
	}
	for k, c := range counted {
		f := float64(covered[k]) / float64(c)
		t.Logf("%s: %.3f of %d stages covered", k, f, c)
		if f < 0.92 || f > 0.99 {
			t.Errorf("%s: the 95 %% interval held the truth in %.3f of %d stages, want about 0.95", k, f, c)
		}
	}
}
