package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/spate-dev/spate/result"
)

// Interval settings.
const (
	// IntervalConfidence is the level of the capacity's interval.
	IntervalConfidence = 0.95
	// intervalResamples is the number of bootstrap resamples.
	intervalResamples = 4000
)

// MinConfirmSpread is the least relative distance between the two rates
// the interval's trials run at: a narrower bracket is widened around its
// middle, since the slope of the scores between two close rates is mostly
// noise.
const MinConfirmSpread = 0.1

// confirm runs trials at two rates around the bracket [lo, hi) — its ends,
// or, when closer than MinConfirmSpread, rates that far apart around its
// middle — until each has cfg.Confirm judged trials (the search's own
// count), then computes the capacity's confidence interval from them (see
// interval). It returns only the errors that are not the search's own
// stops.
func (s *searcher) confirm(ctx context.Context, lo, hi float64) error {
	if s.cfg.Confirm < 0 || lo <= 0 || hi <= 0 {
		return nil
	}
	passed := lo
	if (hi-lo)/hi < MinConfirmSpread {
		mid := (lo + hi) / 2
		lo, hi = round4(mid*(1-MinConfirmSpread/2)), round4(mid*(1+MinConfirmSpread/2))
	}
	c := s.out.Capacity
	for _, r := range []float64{lo, hi} {
		for tries := 0; len(s.scores[r]) < s.cfg.Confirm && tries < 2*s.cfg.Confirm; tries++ {
			s.confirming = true
			_, err := s.run(ctx, Load{Rate: r}, false)
			s.confirming = false
			if errors.Is(err, errTooMany) {
				c.Warnings = append(c.Warnings, fmt.Sprintf("no confidence interval: --max-trials %d reached before %d trials at each end of the bracket", s.cfg.MaxTrials, s.cfg.Confirm))
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
	// The rate reported must pass by the search's own rule, a majority of
	// its trials, the repeated ones included: a lucky pass the repeats
	// contradict is no capacity.
	k, n := 0, 0
	for _, tr := range c.Trials {
		if tr.RateRPS == passed && tr.Concurrency == 0 && tr.Reason != ReasonInvalid && tr.Reason != ReasonImprecise && tr.Reason != ReasonTooShort {
			n++
			if tr.Pass {
				k++
			}
		}
	}
	if n >= 2 && 2*k <= n {
		c.Inconclusive = fmt.Sprintf("the capacity's rate, %.4g req/s, passed in %d of its %d trials (the repeats did not bear out the search's pass): its capacity is not known; use --repeats 3 or longer trials", passed, k, n)
	}
	iv, warn := interval(s.scores[lo], s.scores[hi], lo, hi)
	c.Interval = iv
	if warn != "" {
		c.Warnings = append(c.Warnings, warn)
	}
	if iv != nil && iv.EstimateRPS < passed {
		c.Warnings = append(c.Warnings, fmt.Sprintf("the repeated trials put the capacity at %.4g req/s, under the highest rate the search saw pass (%.4g): trust the interval", iv.EstimateRPS, passed))
	}
	return nil
}

// interval is the confidence interval of the capacity from trials at the
// two ends of the bracket: the rate at which the line through the mean
// scores at lo and hi crosses 1 (a trial's score is ≥ 1 when it delivers
// and meets the goodput target), and the bootstrap percentile interval of
// that rate over the trials resampled at each end. It gives no interval,
// saying why, when there are fewer than 2 trials an end, the scores do not
// fall across the bracket, or more than 5 % of resamples do not.
func interval(los, his []float64, lo, hi float64) (*result.CapacityInterval, string) {
	if len(los) < 2 || len(his) < 2 {
		return nil, fmt.Sprintf("no confidence interval: it needs ≥ 2 judged trials at each end of the bracket, have %d and %d (--confirm)", len(los), len(his))
	}
	est, ok := crossing(mean(los), mean(his), lo, hi)
	if !ok {
		return nil, fmt.Sprintf("no confidence interval: the repeated trials' mean score is %.3f at %.4g req/s and %.3f at %.4g, not falling through 1 across the bracket (noise beside its width: use longer trials or a coarser --resolution)", mean(los), lo, mean(his), hi)
	}
	rng := rand.New(rand.NewPCG(uint64(math.Float64bits(lo)), uint64(math.Float64bits(hi))))
	ests := make([]float64, 0, intervalResamples)
	bad := 0
	for range intervalResamples {
		if e, ok := crossing(resampleMean(los, rng), resampleMean(his, rng), lo, hi); ok {
			ests = append(ests, e)
		} else {
			bad++
		}
	}
	if float64(bad) > 0.05*intervalResamples {
		return nil, fmt.Sprintf("no confidence interval: in %.0f %% of resamples the trials' scores do not fall through 1 across the bracket (too noisy: use longer trials or more --confirm)", 100*float64(bad)/intervalResamples)
	}
	slices.Sort(ests)
	a := (1 - IntervalConfidence) / 2
	q := func(p float64) float64 { return ests[int(math.Round(p*float64(len(ests)-1)))] }
	return &result.CapacityInterval{LowRPS: q(a), HighRPS: q(1 - a), EstimateRPS: est, Confidence: IntervalConfidence,
		Trials: [2]int{len(los), len(his)}}, ""
}

// crossing is the rate at which the line through (lo, sLo) and (hi, sHi)
// is 1; ok is false when the line does not fall or crosses 1 more than one
// bracket width outside it.
func crossing(sLo, sHi, lo, hi float64) (float64, bool) {
	if sHi >= sLo || hi <= lo {
		return 0, false
	}
	x := lo + (sLo-1)/(sLo-sHi)*(hi-lo)
	w := hi - lo
	return x, x >= lo-w && x <= hi+w && x > 0
}

// round4 rounds to 4 significant digits (trial names show rates so).
func round4(x float64) float64 {
	if x <= 0 {
		return x
	}
	p := math.Pow(10, 3-math.Floor(math.Log10(x)))
	return math.Round(x*p) / p
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func resampleMean(xs []float64, rng *rand.Rand) float64 {
	var s float64
	for range xs {
		s += xs[rng.IntN(len(xs))]
	}
	return s / float64(len(xs))
}
