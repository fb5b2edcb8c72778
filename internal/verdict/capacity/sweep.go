package capacity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spate-dev/spate/result"
)

// SweepConfig tunes a sweep.
type SweepConfig struct {
	Criteria
	// Concurrency is the closed-loop concurrency whose throughput sets the
	// top of the sweep (default 16).
	Concurrency int
	// Steps are the open-loop rates as fractions of the closed-loop
	// throughput (default 0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0).
	Steps []float64
	// Repeats is the number of trials per rate (default 1).
	Repeats int
	// Confirm and OnTrial: see Config.
	Confirm int
	OnTrial func(n int, l Load, sc *result.Scenario, a Assessment)
}

// DefaultSteps are the fractions of the closed-loop maximum a sweep tries.
var DefaultSteps = []float64{0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0}

// Sweep measures the closed-loop throughput at cfg.Concurrency, then
// steps open-loop rates up to it in the given fractions, in order, and
// stops at the first rate that fails with a sign of saturation (not only
// low goodput). The capacity is the highest passing rate below the first
// failing one, both decided by repeating their trials (see settle; the
// sweep does not add steps when an end does not stand, it moves to the
// next step that passed or failed).
func Sweep(ctx context.Context, trial Trial, cfg SweepConfig) (*Outcome, error) {
	cfg.Criteria = cfg.Criteria.withDefaults()
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	if len(cfg.Steps) == 0 {
		cfg.Steps = DefaultSteps
	}
	// Lowest first, whatever order they were given in: the sweep stops at
	// the first step that fails and calls the steps below it passed.
	cfg.Steps = slices.Sorted(slices.Values(cfg.Steps))
	if cfg.Repeats <= 0 {
		cfg.Repeats = 1
	}
	// Room for every step, and for deciding each (its retries included).
	steps := (1 + len(cfg.Steps)*max(cfg.Repeats, MaxRateTrials, cfg.Confirm)) * (1 + MaxInvalidRetries)
	s := newSearcher(trial, Config{Criteria: cfg.Criteria, Repeats: 1, MaxTrials: steps, Confirm: cfg.Confirm}, "sweep")
	s.out.Trial = cfg.OnTrial
	s.cfg.Repeats = 1
	if _, err := s.probe(ctx, Load{Concurrency: cfg.Concurrency}); err != nil {
		return &s.out, s.finish(0, 0, err)
	}
	top := closedLoopRate(&s.out.Scenarios[0], cfg.Concurrency)
	c := s.out.Capacity
	c.ClosedLoopMaxRPS, c.Concurrency = top, cfg.Concurrency
	if top <= 0 {
		_ = s.finish(0, 0, nil)
		return &s.out, errors.New("the closed-loop trial completed no request: nothing to sweep up to")
	}
	s.cfg.Repeats, s.out.Capacity.Repeats = cfg.Repeats, cfg.Repeats
	lo, hi := 0.0, 0.0
	for _, f := range cfg.Steps {
		r := f * top
		pass, err := s.probe(ctx, Load{Rate: r})
		if err != nil {
			return &s.out, s.finish(lo, hi, err)
		}
		if pass {
			if hi == 0 {
				lo = r
			}
			continue
		}
		if hi == 0 {
			hi = r
		}
		if s.out.Capacity.Saturated {
			break
		}
	}
	var err error
	if cfg.Confirm >= 0 {
		_, _, err = s.settle(ctx, lo, hi, nil)
		lo, hi = s.settled(err)
	}
	if err := s.finish(lo, hi, err); err != nil {
		return &s.out, err
	}
	if hi == 0 && c.Inconclusive == "" {
		c.Warnings = append(c.Warnings, fmt.Sprintf("every rate up to the closed-loop maximum at concurrency %d passed", cfg.Concurrency))
		c.Warnings = slices.DeleteFunc(c.Warnings, func(w string) bool { return strings.Contains(w, "--max-rate") })
	}
	return &s.out, nil
}

// closedLoopRate is the throughput of a closed-loop trial at concurrency
// c: by Little's law c / mean E2E when the trial has E2E figures — exact in
// steady state, and unlike a count of completions not cut short by a
// trial only a few E2Es long — else the steady rate of its series, else
// its whole-stage rate.
func closedLoopRate(sc *result.Scenario, c int) float64 {
	if d, ok := sc.Metrics["e2e_ms"]; ok && d.Count > 0 && d.Mean > 0 {
		return float64(c) / (d.Mean / 1000)
	}
	return max(sc.Throughput.RequestsPerS, steadyRate(&sc.Series))
}

// steadyRate is the mean successes per second over the seconds of load,
// leaving out the first (requests still in flight) and the partial last:
// a whole-stage rate also counts the drain and so understates a short
// trial's throughput.
func steadyRate(s *result.Series) float64 {
	end := 0
	for i := len(s.SentPerS) - 1; i >= 0; i-- {
		if s.SentPerS[i] > 0 {
			end = i
			break
		}
	}
	end = min(end, len(s.CompletedPerS), len(s.ErrorsPerS))
	if end < 2 {
		return 0
	}
	ok := 0
	for i := 1; i < end; i++ {
		ok += s.CompletedPerS[i] - s.ErrorsPerS[i]
	}
	return float64(ok) / float64(end-1)
}
