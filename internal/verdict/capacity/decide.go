package capacity

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// Decision settings. Near a server's knee a trial is a coin toss — a real
// engine's 10 s trials at one rate pass one time and fail the next — so
// the search does not take one trial's verdict for its answer: it decides
// whether the final bracket's ends pass by repeating their trials.
const (
	// DecisionConfidence is the confidence at which the search decides
	// that a rate passes or fails: Wald's sequential probability ratio
	// test on its trials' pass/fail, between "trials at this rate pass at
	// least 3 times in 4" and "at most once in 4", with both errors at
	// most 1 − DecisionConfidence. With these it decides when the passes
	// outnumber the failures by decisionMargin, or the failures the passes.
	DecisionConfidence = 0.95
	// MaxRateTrials is the most trials at one rate the decision runs
	// before it calls the rate undecided.
	MaxRateTrials = 6
	// decisionPass and decisionFail are the test's two hypotheses: the
	// probability that a trial at the rate passes.
	decisionPass, decisionFail = 0.75, 0.25
)

// decisionMargin is the lead of passes over failures (or failures over
// passes) at which the sequential test decides: each pass adds
// log(decisionPass/decisionFail) to the log likelihood ratio, each failure
// as much away (the hypotheses are symmetric about 1/2), and the test
// stops at ±log(confidence/(1 − confidence)): a lead of 3.
var decisionMargin = int(math.Ceil(math.Log(DecisionConfidence/(1-DecisionConfidence)) / math.Log(decisionPass/decisionFail)))

// verdict is the decision on a rate.
type verdict int

const (
	undecided verdict = iota
	passes
	fails
)

// tally is the pass/fail count of the judged trials at a rate.
type tally struct{ passed, n int }

// decision is the sequential test's verdict on a tally.
func (t tally) decision() verdict {
	switch lead := 2*t.passed - t.n; {
	case lead >= decisionMargin:
		return passes
	case -lead >= decisionMargin:
		return fails
	}
	return undecided
}

// decide runs trials at rate, beside those already judged there, until
// the sequential test decides (and there are at least cfg.Confirm of
// them) or MaxRateTrials (or cfg.Confirm, if more) have run.
func (s *searcher) decide(ctx context.Context, rate float64) (verdict, error) {
	if v, ok := s.decided[rate]; ok {
		return v, nil
	}
	limit := max(MaxRateTrials, s.cfg.Confirm)
	for {
		t := s.tallies[rate]
		v := t.decision()
		if v == passes {
			// Most trials passed; the rate passes when their requests,
			// taken together, were good often enough too (see
			// goodputDecision).
			v = s.goodputDecision(rate)
		}
		if (v != undecided && t.n >= s.cfg.Confirm) || t.n >= limit {
			s.decided[rate] = v
			return v, nil
		}
		s.confirming = true
		a, err := s.run(ctx, Load{Rate: rate}, false)
		for retry := 0; err == nil && Rerun(a) && retry < MaxInvalidRetries; retry++ {
			a, err = s.run(ctx, Load{Rate: rate}, true)
		}
		s.confirming = false
		switch {
		case err != nil:
			return undecided, err
		case a.CannotTell:
			return undecided, errCannotTell
		case Rerun(a):
			return undecided, errInvalid
		}
	}
}

// goodputDecision decides, at DecisionConfidence, whether the requests
// of a long run at rate would be good (succeed within every SLO) often
// enough: whether the mean goodput fraction of the judged trials at rate
// meets the target. Trials whose goodput passes three times in four may
// still fall short on the whole: near a knee a trial's goodput is skewed
// — most trials a little over the target, a burst of slow service taking
// one far under it — so four passes and one trial at 55 % are a rate
// that serves under the target. The test is one-sided at each end:
// passes when the mean is surely at least the target, fails when surely
// under it, undecided otherwise; its margin is the larger of the trials'
// spread (Student's t over their goodputs) and the binomial spread of
// their requests pooled at the target, so that a few trials that happen
// to agree do not stand for a spread of zero.
func (s *searcher) goodputDecision(rate float64) verdict {
	g := s.goodputs[rate]
	n := len(g)
	if n < 2 {
		return undecided
	}
	target := s.cfg.Goodput
	half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(DecisionConfidence) * stddev(g) / math.Sqrt(float64(n))
	reqs := 0
	for _, k := range s.requests[rate] {
		reqs += k
	}
	if reqs > 0 {
		half = math.Max(half, goodputZ*math.Sqrt(target*(1-target)/float64(reqs)))
	}
	switch m := mean(g); {
	case m-half >= target:
		return passes
	case m+half < target:
		return fails
	}
	return undecided
}

// goodputZ is the standard normal quantile of DecisionConfidence.
var goodputZ = distuv.UnitNormal.Quantile(DecisionConfidence)

// settle decides the final bracket's ends at DecisionConfidence and
// returns the decided bracket: lo, the highest rate decided to pass (0:
// none), and hi, the lowest decided to fail above it (0: none). A lower
// end that does not pass moves the bracket down to the highest rate below
// it whose trials mostly passed, an upper end that passes moves it up to
// the lowest above whose trials mostly failed; narrow (the adaptive
// search's exponential steps and bisection; nil for a sweep) then narrows
// a bracket that moved past a decided rate with single trials again,
// until the ends stand. A rate the test cannot decide is left inside the
// bracket (settled reports it).
func (s *searcher) settle(ctx context.Context, lo, hi float64, narrow func(ctx context.Context, lo, hi float64) (float64, float64, error)) (float64, float64, error) {
	var err error
	for {
		if lo > 0 {
			v, err := s.decide(ctx, lo)
			if err != nil {
				return lo, hi, err
			}
			if v != passes {
				if v == fails {
					hi = lo
				}
				lo = s.below(lo)
				if v == fails && narrow != nil && lo > 0 {
					if lo, hi, err = narrow(ctx, lo, hi); err != nil {
						return lo, hi, err
					}
				}
				continue
			}
		}
		if hi > 0 {
			v, err := s.decide(ctx, hi)
			if err != nil {
				return lo, hi, err
			}
			switch v {
			case passes:
				lo, hi = hi, s.above(hi)
				if narrow != nil {
					if lo, hi, err = narrow(ctx, lo, hi); err != nil {
						return lo, hi, err
					}
				}
				continue
			case undecided:
				// The rate is left inside the bracket: its upper end is
				// the next rate above that fails, tried for when there is
				// none.
				next := s.above(hi)
				if next == 0 && narrow != nil {
					if _, next, err = narrow(ctx, hi, 0); err != nil {
						return lo, hi, err
					}
				}
				hi = next
				continue
			}
		}
		return lo, hi, err
	}
}

// below is the highest rate under r not decided to fail whose judged
// trials mostly passed (0: none); the trials are assumed to pass more
// often the lower the rate.
func (s *searcher) below(r float64) float64 {
	best := 0.0
	for x, t := range s.tallies {
		if x < r && x > best && s.decided[x] != fails && 2*t.passed > t.n {
			best = x
		}
	}
	return best
}

// above is the lowest rate over r not decided to pass whose judged trials
// mostly failed (0: none).
func (s *searcher) above(r float64) float64 {
	best := 0.0
	for x, t := range s.tallies {
		if x > r && (best == 0 || x < best) && s.decided[x] != passes && 2*t.passed < t.n {
			best = x
		}
	}
	return best
}

// bracket is the decided bracket: lo, the highest rate decided to pass
// below every rate decided to fail (0: none), and hi, the lowest decided
// to fail above it (0: none).
func (s *searcher) bracket() (lo, hi float64) {
	for r, v := range s.decided {
		if v == fails && (hi == 0 || r < hi) {
			hi = r
		}
	}
	for r, v := range s.decided {
		if v == passes && r > lo && (hi == 0 || r < hi) {
			lo = r
		}
	}
	return lo, hi
}

// settled fills the capacity's decision and interval from the decided
// bracket, which it returns, after settle ended with err, and says what
// the test could not decide: a rate left undecided inside the bracket is
// a warning (the interval holds it); one that leaves the capacity or the
// interval's upper end unknown, or --max-trials reached before any rate
// was decided to pass, makes the search inconclusive.
func (s *searcher) settled(err error) (lo, hi float64) {
	lo, hi = s.bracket()
	c := s.out.Capacity
	c.Confidence = DecisionConfidence
	if t := s.tallies[lo]; lo > 0 {
		c.RateTrials = [2]int{t.passed, t.n}
	}
	var open []string
	for _, r := range slices.Sorted(maps.Keys(s.decided)) {
		if s.decided[r] != undecided || (lo > 0 && r < lo) || (hi > 0 && r > hi) {
			continue
		}
		t := s.tallies[r]
		if t.decision() == passes {
			// Decided by neither test: its trials passed, their goodput
			// was not surely over the target.
			open = append(open, fmt.Sprintf("%.4g req/s (passed %d of %d trials, goodput %.2f %% over them)", r, t.passed, t.n, 100*mean(s.goodputs[r])))
			continue
		}
		open = append(open, fmt.Sprintf("%.4g req/s (passed %d of %d trials)", r, t.passed, t.n))
	}
	what := ""
	if len(open) > 0 {
		what = fmt.Sprintf("the trials could not separate %s from the capacity at %.0f %% confidence (that needs %d more passes than failures, or the reverse, in at most %d trials)%s",
			strings.Join(open, ", "), 100*DecisionConfidence, decisionMargin, max(MaxRateTrials, s.cfg.Confirm), s.longer())
	}
	switch {
	case errors.Is(err, errTooMany) && lo == 0:
		c.Inconclusive = fmt.Sprintf("stopped after %d trials (the most allowed, --max-trials) before any rate was decided to pass at %.0f %% confidence: raise --max-trials", s.cfg.MaxTrials, 100*DecisionConfidence)
		if what != "" {
			c.Inconclusive += "; " + what
		}
	case what == "":
	case lo > 0 && hi > 0:
		c.Warnings = append(c.Warnings, what)
	case lo > 0 && err == nil:
		c.Inconclusive = what + fmt.Sprintf("; %.4g req/s passed, no rate above it was decided to fail", lo)
	case err == nil:
		c.Inconclusive = what + "; no rate was decided to pass"
	default:
		c.Warnings = append(c.Warnings, what)
	}
	if lo > 0 || hi > 0 {
		iv, warn := interval(s.tallies)
		if iv != nil {
			iv.Trials = [2]int{s.tallies[lo].n, s.tallies[hi].n} // 0 at an end not decided
			c.Interval = iv
		}
		if warn != "" {
			c.Warnings = append(c.Warnings, warn)
		}
	}
	return lo, hi
}

// longer says how long trials would need to be to decide the rates left
// undecided: the spread of their trials' scores (Assessment.Score, ≥ 1
// passes) shrinks as the square root of the trials' length, and a trial
// decides in a few tries when its mean score is 0.67 spreads from 1 (the
// quartile of a normal spread: it then passes 3 times in 4, or once).
// The distance from 1 is taken as at least the resolution, so that the
// length tells a rate that far from the knee.
func (s *searcher) longer() string {
	worst := 0.0
	for r, v := range s.decided {
		sc := s.scores[r]
		if v != undecided || len(sc) < 2 {
			continue
		}
		m, sd := mean(sc), stddev(sc)
		gap := math.Max(math.Abs(m-1), s.cfg.Resolution)
		worst = math.Max(worst, math.Pow(0.674*sd/gap, 2))
	}
	// The trials run did not decide: longer ones are needed, twice as
	// long at least.
	worst = math.Max(worst, 2)
	d := s.cfg.Duration
	if d == 0 {
		return fmt.Sprintf(": trials %.1f× as long would (--trial-duration)", worst)
	}
	return fmt.Sprintf(": trials of about %s would (--trial-duration; now %s)", (time.Duration(worst * float64(d))).Round(time.Second), d)
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func stddev(xs []float64) float64 {
	m := mean(xs)
	var s float64
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(xs)-1))
}
