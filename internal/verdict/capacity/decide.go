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
	// GoodputWindow is how far above a rate, relatively, the trials whose
	// goodput is judged with its own reach (see goodputDecision): those
	// at rates up to rate / (1 − GoodputWindow), 11 % above. A rate left
	// undecided at the bracket's lower end is followed by the rate that
	// much under it (see settle).
	GoodputWindow = 0.10
	// goodputSpread is the least standard deviation of trials' goodput
	// the goodput test assumes, as a multiple of the geometric mean of
	// their mean shortfall from 100 % and the target's (see
	// goodputDecision).
	goodputSpread = 2.0
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
// them) or MaxRateTrials (or cfg.Confirm, if more) have run. A rate whose
// trials pass the sequential test passes only by the goodput test too
// (goodputDecision), which judges them with the trials just above: an
// adaptive search with none there runs one, at the window's top
// (windowTop), unless the rate's own trials lost no request (a server
// with no SLO, or short of a cliff, whose trials above would only add a
// trial to the search).
// A rate whose own trials passed but whose goodput, with the trials
// above, is under the target on the whole is left undecided once it has
// cfg.Confirm trials: more at the rate could lift the window's mean only
// by being kinder than the rate's own, and the search spends its trials
// lower instead (settle).
func (s *searcher) decide(ctx context.Context, rate float64) (verdict, error) {
	if v, ok := s.decided[rate]; ok {
		return v, nil
	}
	limit := max(MaxRateTrials, s.cfg.Confirm)
	for {
		t := s.tallies[rate]
		v := t.decision()
		next := rate
		if v == passes {
			if up := s.windowTop(rate); up > 0 && len(s.window(rate)) == 1 && mean(s.goodputs[rate]) < 1 {
				next = up
			} else if v = s.goodputDecision(rate); v == undecided && t.n >= s.cfg.Confirm && s.windowMean(rate) < s.cfg.Goodput {
				s.decided[rate] = undecided
				return undecided, nil
			}
		}
		if next == rate && ((v != undecided && t.n >= s.cfg.Confirm) || t.n >= limit) {
			s.decided[rate] = v
			return v, nil
		}
		s.confirming = next == rate
		a, err := s.run(ctx, Load{Rate: next}, false)
		for retry := 0; err == nil && Rerun(a) && retry < MaxInvalidRetries; retry++ {
			a, err = s.run(ctx, Load{Rate: next}, true)
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
// enough: whether the mean goodput fraction of trials at rate meets the
// target. Trials whose goodput passes three times in four may still fall
// short on the whole: near a knee a trial's goodput is skewed — most
// trials a little over the target, a burst of slow service taking one
// far under it — so a rate whose 10 s trials pass two times in three
// serves under the target over 30 s, and three passes in a row, with no
// burst among them, come often enough. The test is one-sided at each
// end, on different trials:
//
//   - it fails when the mean of the rate's own trials is surely under
//     the target (Student's t over their goodputs, at least the binomial
//     margin of their requests pooled at the target). Only the rate's
//     own trials say it fails: a neighbour above that is bad says
//     nothing of it.
//   - it passes when the mean of its trials and those at the rates up to
//     GoodputWindow above it (window) is surely at least the target.
//     Goodput falls as the rate rises, so the trials just above are no
//     kinder than the rate's own: taken with them the rate's few trials
//     do not stand alone, a burst the rate's trials missed shows in its
//     neighbours', and the capacity keeps a margin below the rate where
//     goodput falls under the target. Their spread is taken as at least
//     goodputSpread × √((1 − mean)(1 − target)): a few trials that missed
//     the bursts agree closely, and their own spread would stand for a
//     rate that rarely falls short; a shortfall of the mean's size spread
//     that much (the queue model's 10 s trials near its knee: a standard
//     deviation of 1.4 times the mean shortfall) is allowed for, and
//     trials that lose nothing (1 − mean = 0: a server before a cliff)
//     are held to the binomial margin only.
//
// Otherwise it is undecided.
func (s *searcher) goodputDecision(rate float64) verdict {
	target := s.cfg.Goodput
	if own := s.goodputs[rate]; len(own) >= 2 {
		if _, hi := goodputBounds(own, s.requests[rate], target, 0); hi < target {
			return fails
		}
	}
	var g []float64
	var reqs []int
	for _, x := range s.window(rate) {
		g = append(g, s.goodputs[x]...)
		reqs = append(reqs, s.requests[x]...)
	}
	if len(g) < 2 {
		return undecided
	}
	if lo, _ := goodputBounds(g, reqs, target, goodputSpread); lo >= target {
		return passes
	}
	return undecided
}

// goodputBounds are the one-sided bounds, at DecisionConfidence, of the
// mean of the goodputs g of trials of reqs requests: Student's t over
// them, their spread taken as at least spread × √((1 − mean)(1 −
// target)), and the margin at least the binomial spread of their requests
// pooled at the target, so that a few trials that happen to agree do not
// stand for a spread of zero.
func goodputBounds(g []float64, reqs []int, target, spread float64) (lo, hi float64) {
	n := len(g)
	m := mean(g)
	sd := math.Max(stddev(g), spread*math.Sqrt(math.Max(1-m, 0)*(1-target)))
	half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(DecisionConfidence) * sd / math.Sqrt(float64(n))
	total := 0
	for _, k := range reqs {
		total += k
	}
	if total > 0 {
		half = math.Max(half, goodputZ*math.Sqrt(target*(1-target)/float64(total)))
	}
	return m - half, m + half
}

// window is the rates with judged trials from rate up to GoodputWindow
// above it: x (1 − GoodputWindow) ≤ rate.
func (s *searcher) window(rate float64) []float64 {
	var xs []float64
	for x, g := range s.goodputs {
		if len(g) > 0 && x >= rate && (x == rate || x*(1-GoodputWindow) <= rate*(1+1e-9)) {
			xs = append(xs, x)
		}
	}
	return xs
}

// windowMean is the mean goodput of the trials in rate's window.
func (s *searcher) windowMean(rate float64) float64 {
	var g []float64
	for _, x := range s.window(rate) {
		g = append(g, s.goodputs[x]...)
	}
	return mean(g)
}

// windowTop is the top of rate's window, where an adaptive search runs a
// trial when none above rate bears on its goodput (0: none, for a sweep,
// whose steps are given, or at MaxRate).
func (s *searcher) windowTop(rate float64) float64 {
	if s.out.Capacity.Method != "adaptive" || rate >= s.cfg.MaxRate {
		return 0
	}
	return math.Min(rate/(1-GoodputWindow), s.cfg.MaxRate)
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
// bracket (settled reports it); in an adaptive search the next lower end
// below it is the rate GoodputWindow under it, unless a rate with trials
// that mostly passed lies nearer: its window then holds the undecided
// rate's trials, and the search does not fall back to a rate of the
// exponential steps far below (half the capacity, when 16 req/s
// was undecided and 8 the rate below it).
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
				top := lo
				lo = s.below(lo)
				if step := top * (1 - GoodputWindow); v == undecided && narrow != nil && step > lo && step >= s.cfg.MinRate {
					// An undecided lower end stays inside the bracket;
					// the next candidate is the rate whose window reaches
					// up to it, unless one with trials is nearer.
					lo = step
					continue
				}
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
			// Decided by neither test: its trials passed, their goodput,
			// with that of the trials just above, was not surely over
			// the target.
			w := fmt.Sprintf("goodput %.2f %% over them", 100*mean(s.goodputs[r]))
			if len(s.window(r)) > 1 {
				w += fmt.Sprintf(", %.2f %% with those up to %.0f %% above", 100*s.windowMean(r), 100*(1/(1-GoodputWindow)-1))
			}
			open = append(open, fmt.Sprintf("%.4g req/s (passed %d of %d trials, %s)", r, t.passed, t.n, w))
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
