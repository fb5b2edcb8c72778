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
	// OnTrial, when set, is told of every trial as it is judged.
	OnTrial func(n int, l Load, sc *result.Scenario, a Assessment)
	// Confirm is the least number of trials at each end of the final
	// bracket, whose pass or failure the search decides by repeating
	// their trials (see decide; the search's own trials there count, and
	// the decision needs at least decisionMargin); negative: the ends are
	// not decided, the capacity is the search's single trials' and has no
	// interval.
	Confirm int
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

// DefaultConfirm is the default least number of trials at each end of the
// final bracket: as many as the decision needs when they agree.
const DefaultConfirm = 3

// MaxInvalidRetries is how many times a trial whose measurement was
// invalid (the generator did not keep its schedule) is run again at the
// same rate before the search gives up on that rate.
const MaxInvalidRetries = 2

// Outcome is a finished search: the figures and every trial's scenario, in
// the order run (named as in Capacity.Trials).
type Outcome struct {
	Capacity  *result.Capacity
	Scenarios []result.Scenario
	// Trial, when set, is told of every trial as it is judged.
	Trial func(n int, l Load, sc *result.Scenario, a Assessment)
}

// searcher holds the state of one search.
type searcher struct {
	trial Trial
	cfg   Config
	out   Outcome
	// goodputs are the goodput fractions of the judged trials at each
	// rate, scores their scores (Assessment.Score) and tallies how many
	// of them passed.
	goodputs map[float64][]float64
	// requests are the judged trials' request counts at each rate.
	requests map[float64][]int
	scores   map[float64][]float64
	tallies  map[float64]tally
	// decided holds the decisions on the rates the search decided (see
	// decide).
	decided map[float64]verdict
	// confirming marks the trials run to decide a rate.
	confirming bool
}

// probe runs cfg.Repeats trials at a rate and says whether most passed.
// A trial whose measurement is invalid, or too imprecise to decide
// (Rerun), is run again, up to MaxInvalidRetries times; one that cannot tell ends the search
// (errCannotTell), as does a rate still invalid after its retries
// (errInvalid).
func (s *searcher) probe(ctx context.Context, load Load) (bool, error) {
	passed := 0
	for range s.cfg.Repeats {
		a, err := s.run(ctx, load, false)
		if err != nil {
			return false, err
		}
		for retry := 0; Rerun(a) && retry < MaxInvalidRetries; retry++ {
			if a, err = s.run(ctx, load, true); err != nil {
				return false, err
			}
		}
		switch {
		case a.CannotTell:
			return false, errCannotTell
		case Rerun(a):
			return false, errInvalid
		}
		if a.Pass {
			passed++
		}
		if a.Reason != "" && a.Reason != ReasonGoodput && a.Reason != ReasonClosedLoop && load.Rate > 0 && !s.out.Capacity.Saturated {
			s.out.Capacity.Saturated = true
			s.out.Capacity.SaturationReason = fmt.Sprintf("%s at %s", a.Reason, describe(load))
		}
	}
	return 2*passed > s.cfg.Repeats, nil
}

// run runs one trial and records it; retry marks a rerun of an invalid
// trial.
func (s *searcher) run(ctx context.Context, load Load, retry bool) (Assessment, error) {
	if len(s.out.Capacity.Trials) >= s.cfg.MaxTrials {
		return Assessment{}, errTooMany
	}
	sc, err := s.trial(ctx, load)
	if err != nil {
		return Assessment{}, fmt.Errorf("trial %d (%s): %w", len(s.out.Capacity.Trials)+1, describe(load), err)
	}
	a := Assess(sc, load.Rate, s.cfg.Criteria)
	if a.Pass {
		// The service time of a server that kept up: later trials are
		// judged from it when their own first completions come later.
		if st := FastestE2E(sc); st > 0 && (s.cfg.ServiceTime == 0 || st < s.cfg.ServiceTime) {
			s.cfg.ServiceTime = st
		}
	}
	if load.Concurrency > 0 {
		// A closed-loop trial measures throughput; it is not judged.
		a = Assessment{Reason: ReasonClosedLoop}
	}
	sc.Name = fmt.Sprintf("trial-%02d-%s", len(s.out.Capacity.Trials)+1, describe(load))
	s.out.Capacity.Trials = append(s.out.Capacity.Trials, result.CapacityTrial{
		Scenario: sc.Name, RateRPS: load.Rate, Concurrency: load.Concurrency, AchievedRPS: sc.Load.AchievedRate,
		Goodput: sc.Goodput.Fraction, Valid: sc.Load.Valid, Pass: a.Pass, Reason: a.Reason,
		CompletedRPS: a.CompletedRPS, Delivered: a.Delivered, SteadyS: a.SteadyS, Score: a.Score, Retry: retry, Confirm: s.confirming,
	})
	s.out.Scenarios = append(s.out.Scenarios, *sc)
	if load.Rate > 0 && !a.CannotTell && !Rerun(a) {
		s.goodputs[load.Rate] = append(s.goodputs[load.Rate], sc.Goodput.Fraction)
		s.requests[load.Rate] = append(s.requests[load.Rate], sc.Requests.Total)
		s.scores[load.Rate] = append(s.scores[load.Rate], a.Score)
		t := s.tallies[load.Rate]
		t.n++
		if a.Pass {
			t.passed++
		}
		s.tallies[load.Rate] = t
	}
	if s.out.Trial != nil {
		s.out.Trial(len(s.out.Capacity.Trials), load, sc, a)
	}
	return a, nil
}

var (
	errTooMany    = errors.New("too many trials")
	errCannotTell = errors.New("a trial could not tell")
	errInvalid    = errors.New("a rate stayed invalid")
)

func describe(l Load) string {
	if l.Concurrency > 0 {
		return fmt.Sprintf("c%d", l.Concurrency)
	}
	return fmt.Sprintf("%.4grps", l.Rate)
}

func newSearcher(trial Trial, cfg Config, method string) *searcher {
	return &searcher{trial: trial, cfg: cfg, goodputs: map[float64][]float64{}, requests: map[float64][]int{}, scores: map[float64][]float64{},
		tallies: map[float64]tally{}, decided: map[float64]verdict{},
		out: Outcome{Capacity: &result.Capacity{Method: method, GoodputTarget: cfg.Goodput, Repeats: cfg.Repeats, Trials: []result.CapacityTrial{}}}}
}

// Search finds the highest open-loop rate that passes (see Judge): it
// doubles the rate from MinRate until a rate fails or MaxRate passes,
// then bisects between the highest passing and the lowest failing rate
// until they are within Resolution of each other; then it decides, by
// repeating their trials, whether the bracket's ends pass (see settle),
// moving and narrowing the bracket again when one does not stand. A
// failing rate is never exceeded, so a saturated server is not pushed
// further. On error (a trial that could not run, ctx cancelled) the
// outcome so far is returned with it.
func Search(ctx context.Context, trial Trial, cfg Config) (*Outcome, error) {
	cfg = cfg.withDefaults()
	if cfg.MinRate > cfg.MaxRate {
		return nil, fmt.Errorf("the minimum rate %g is above the maximum %g", cfg.MinRate, cfg.MaxRate)
	}
	s := newSearcher(trial, cfg, "adaptive")
	s.out.Trial = cfg.OnTrial
	lo, hi, err := s.narrow(ctx, 0, 0)
	if cfg.Confirm >= 0 && (err == nil || errors.Is(err, errTooMany)) {
		// A search stopped by --max-trials before it decided a rate has
		// no capacity it can vouch for: settled says so.
		if err == nil {
			_, _, err = s.settle(ctx, lo, hi, s.narrow)
		}
		lo, hi = s.settled(err)
	}
	return &s.out, s.finish(lo, hi, err)
}

// narrow runs single probes (cfg.Repeats trials) to narrow the bracket
// [lo, hi): with no failing rate (hi 0) it doubles the rate from lo (or
// MinRate) until one fails or MaxRate passes, then it bisects until the
// bracket is within Resolution.
func (s *searcher) narrow(ctx context.Context, lo, hi float64) (float64, float64, error) {
	if hi == 0 {
		if lo >= s.cfg.MaxRate {
			return lo, 0, nil
		}
		r := s.cfg.MinRate
		if lo > 0 {
			r = math.Min(2*lo, s.cfg.MaxRate)
		}
		for ; ; r = math.Min(2*r, s.cfg.MaxRate) {
			pass, err := s.probe(ctx, Load{Rate: r})
			if err != nil {
				return lo, hi, err
			}
			if !pass {
				hi = r
				break
			}
			lo = r
			if r >= s.cfg.MaxRate {
				return lo, 0, nil
			}
		}
	}
	if lo == 0 {
		return lo, hi, nil
	}
	for (hi-lo)/hi > s.cfg.Resolution {
		mid := (lo + hi) / 2
		pass, err := s.probe(ctx, Load{Rate: mid})
		if err != nil {
			return lo, hi, err
		}
		if pass {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, hi, nil
}

// finish fills the capacity's figures from the final bracket and turns
// the search's own stops into warnings or an inconclusive outcome; it
// returns the errors that are not the search's (a trial that could not
// run, ctx cancelled).
func (s *searcher) finish(lo, hi float64, err error) error {
	c := s.out.Capacity
	c.RateRPS, c.LowRPS, c.HighRPS = lo, lo, hi
	if hi > 0 {
		c.Resolution = (hi - lo) / hi
	}
	if g := s.goodputs[lo]; len(g) > 0 {
		c.GoodputMin, c.GoodputMax = slices.Min(g), slices.Max(g)
	}
	adaptive := c.Method == "adaptive"
	switch {
	case lo == 0 && hi > 0 && adaptive:
		c.Warnings = append(c.Warnings, fmt.Sprintf("the lowest rate tried, %g req/s, already failed: lower --min-rate", hi))
	case lo == 0 && hi > 0:
		c.Warnings = append(c.Warnings, fmt.Sprintf("the lowest step, %.4g req/s, already failed: give lower --sweep-steps", hi))
	case hi == 0 && lo > 0 && adaptive && err == nil:
		c.Warnings = append(c.Warnings, fmt.Sprintf("the highest rate tried, %g req/s, passed: the capacity is above it (raise --max-rate)", lo))
	}
	last := Load{}
	if n := len(c.Trials); n > 0 {
		last = Load{Rate: c.Trials[n-1].RateRPS, Concurrency: c.Trials[n-1].Concurrency}
	}
	switch {
	case errors.Is(err, errTooMany) && c.Inconclusive != "":
		return nil
	case errors.Is(err, errTooMany) && lo == 0 && hi == 0:
		// No rate passed or failed: nothing is known of the capacity.
		c.Inconclusive = fmt.Sprintf("stopped after %d trials (the most allowed, --max-trials) before any rate passed or failed: raise --max-trials", s.cfg.MaxTrials)
		return nil
	case errors.Is(err, errTooMany):
		c.Warnings = append(c.Warnings, fmt.Sprintf("stopped after %d trials (the most allowed, --max-trials) before reaching the resolution", s.cfg.MaxTrials))
		return nil
	case errors.Is(err, errCannotTell):
		t := c.Trials[len(c.Trials)-1]
		c.Inconclusive = fmt.Sprintf("trial %d at %s cannot tell: %d whole second(s) of steady completions, %d needed (the trial is short beside its requests' latency",
			len(c.Trials), describe(last), t.SteadyS, MinSteadySeconds)
		if n := len(s.out.Scenarios); n > 0 {
			if m, ok := s.out.Scenarios[n-1].Metrics["e2e_ms"]; ok && m.P50 > 0 {
				c.Inconclusive += fmt.Sprintf(", E2E p50 %.0f ms", m.P50)
			}
		}
		c.Inconclusive += "): raise --trial-duration"
		return nil
	case errors.Is(err, errInvalid):
		c.Inconclusive = fmt.Sprintf("the load generator could not keep the schedule of %s, or read its responses too late to tell its goodput from the target, in %d tries (see the trials' load.invalid_reason and measurement_error): ", describe(last), MaxInvalidRetries+1)
		if lo > 0 {
			c.Inconclusive += fmt.Sprintf("the capacity is at least %.4g req/s but could not be measured above", lo)
		} else {
			c.Inconclusive += "no rate could be measured (a quieter machine, or --lag-bound, which loosens the validity rule)"
		}
		return nil
	}
	if err != nil {
		c.Interrupted = err.Error()
	}
	return err
}
