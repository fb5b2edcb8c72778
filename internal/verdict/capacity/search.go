package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/spate-dev/spate/result"
)

// Load is what one trial sends: an open-loop Rate, or a closed-loop
// Concurrency.
type Load struct {
	Rate        float64
	Concurrency int
}

// Trial runs one trial of load and returns its scenario.
type Trial func(ctx context.Context, load Load) (*result.Scenario, error)

// Config tunes a search.
type Config struct {
	Criteria
	// MinRate and MaxRate bound the rates tried (defaults 1 and 1000).
	MinRate, MaxRate float64
	// Resolution is the relative width (high−low)/high at which bisection
	// stops (default 0.05).
	Resolution float64
	// Repeats is the number of trials per rate; a rate passes when a
	// majority of them do (default 1).
	Repeats int
	// MaxTrials bounds the number of trials (default 40).
	MaxTrials int
}

func (c Config) withDefaults() Config {
	c.Criteria = c.Criteria.withDefaults()
	if c.MinRate <= 0 {
		c.MinRate = 1
	}
	if c.MaxRate <= 0 {
		c.MaxRate = 1000
	}
	if c.Resolution <= 0 {
		c.Resolution = 0.05
	}
	if c.Repeats <= 0 {
		c.Repeats = 1
	}
	if c.MaxTrials <= 0 {
		c.MaxTrials = 40
	}
	return c
}

// Outcome is a finished search: the figures and every trial's scenario, in
// the order run (named as in Capacity.Trials).
type Outcome struct {
	Capacity  *result.Capacity
	Scenarios []result.Scenario
}

// searcher holds the state of one search.
type searcher struct {
	trial Trial
	cfg   Config
	out   Outcome
	// goodputs are the goodput fractions of the trials at each rate.
	goodputs map[float64][]float64
}

// probe runs cfg.Repeats trials at a rate and says whether most passed.
func (s *searcher) probe(ctx context.Context, load Load) (bool, error) {
	passed := 0
	for range s.cfg.Repeats {
		if len(s.out.Capacity.Trials) >= s.cfg.MaxTrials {
			return false, errTooMany
		}
		sc, err := s.trial(ctx, load)
		if err != nil {
			return false, fmt.Errorf("trial %d (%s): %w", len(s.out.Capacity.Trials)+1, describe(load), err)
		}
		pass, reason := Judge(sc, load.Rate, s.cfg.Criteria)
		if load.Concurrency > 0 {
			// A closed-loop trial measures throughput; it is not judged.
			pass, reason = false, ReasonClosedLoop
		}
		sc.Name = fmt.Sprintf("trial-%02d-%s", len(s.out.Capacity.Trials)+1, describe(load))
		s.out.Capacity.Trials = append(s.out.Capacity.Trials, result.CapacityTrial{
			Scenario: sc.Name, RateRPS: load.Rate, Concurrency: load.Concurrency, AchievedRPS: sc.Load.AchievedRate,
			Goodput: sc.Goodput.Fraction, Valid: sc.Load.Valid, Pass: pass, Reason: reason,
		})
		s.out.Scenarios = append(s.out.Scenarios, *sc)
		if load.Rate > 0 {
			s.goodputs[load.Rate] = append(s.goodputs[load.Rate], sc.Goodput.Fraction)
		}
		if pass {
			passed++
		}
		if reason != "" && reason != ReasonGoodput && load.Rate > 0 && !s.out.Capacity.Saturated {
			s.out.Capacity.Saturated = true
			s.out.Capacity.SaturationReason = fmt.Sprintf("%s at %s", reason, describe(load))
		}
	}
	return 2*passed > s.cfg.Repeats, nil
}

var errTooMany = errors.New("too many trials")

func describe(l Load) string {
	if l.Concurrency > 0 {
		return fmt.Sprintf("c%d", l.Concurrency)
	}
	return fmt.Sprintf("%.4grps", l.Rate)
}

func newSearcher(trial Trial, cfg Config, method string) *searcher {
	return &searcher{trial: trial, cfg: cfg, goodputs: map[float64][]float64{},
		out: Outcome{Capacity: &result.Capacity{Method: method, GoodputTarget: cfg.Goodput, Repeats: cfg.Repeats, Trials: []result.CapacityTrial{}}}}
}

// Search finds the highest open-loop rate that passes (see Judge): it
// doubles the rate from MinRate until a rate fails or MaxRate passes,
// then bisects between the highest passing and the lowest failing rate
// until they are within Resolution of each other. A failing rate is never
// exceeded, so a saturated server is not pushed further. On error (a
// trial that could not run, ctx cancelled) the outcome so far is returned
// with it.
func Search(ctx context.Context, trial Trial, cfg Config) (*Outcome, error) {
	cfg = cfg.withDefaults()
	if cfg.MinRate > cfg.MaxRate {
		return nil, fmt.Errorf("the minimum rate %g is above the maximum %g", cfg.MinRate, cfg.MaxRate)
	}
	s := newSearcher(trial, cfg, "adaptive")
	lo, hi := 0.0, 0.0
	err := func() error {
		for r := cfg.MinRate; ; r = math.Min(2*r, cfg.MaxRate) {
			pass, err := s.probe(ctx, Load{Rate: r})
			if err != nil {
				return err
			}
			if !pass {
				hi = r
				break
			}
			lo = r
			if r >= cfg.MaxRate {
				return nil
			}
		}
		if lo == 0 {
			return nil
		}
		for (hi-lo)/hi > cfg.Resolution {
			mid := (lo + hi) / 2
			pass, err := s.probe(ctx, Load{Rate: mid})
			if err != nil {
				return err
			}
			if pass {
				lo = mid
			} else {
				hi = mid
			}
		}
		return nil
	}()
	s.finish(lo, hi)
	if errors.Is(err, errTooMany) {
		s.out.Capacity.Warnings = append(s.out.Capacity.Warnings, fmt.Sprintf("stopped after %d trials (the most allowed) before reaching the resolution", cfg.MaxTrials))
		err = nil
	}
	return &s.out, err
}

// finish fills the capacity's figures from the final interval.
func (s *searcher) finish(lo, hi float64) {
	c := s.out.Capacity
	c.RateRPS, c.LowRPS, c.HighRPS = lo, lo, hi
	if hi > 0 {
		c.Resolution = (hi - lo) / hi
	}
	if g := s.goodputs[lo]; len(g) > 0 {
		c.GoodputMin, c.GoodputMax = slices.Min(g), slices.Max(g)
	}
	switch {
	case lo == 0 && hi > 0:
		c.Warnings = append(c.Warnings, fmt.Sprintf("the lowest rate tried, %g req/s, already failed: lower --min-rate", hi))
	case hi == 0 && lo > 0:
		c.Warnings = append(c.Warnings, fmt.Sprintf("the highest rate tried, %g req/s, passed: the capacity is above it (raise --max-rate)", lo))
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
