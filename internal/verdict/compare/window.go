package compare

import (
	"math"

	"github.com/spate-dev/spate/result"
)

// Span is the part of a scenario's series that windows are cut from.
type Span struct {
	// Skip is the number of seconds left out at the start (warm-up and
	// settling).
	Skip int
	// Window is the length of a window in seconds.
	Window int
}

// measuredEnd is the end (exclusive) of the seconds in which load was
// still being sent: the second of the last send is partial and the drain
// after it carries no load, so both are left out.
func measuredEnd(s *result.Series) int {
	for i := len(s.SentPerS) - 1; i >= 0; i-- {
		if s.SentPerS[i] > 0 {
			return i
		}
	}
	return 0
}

// drainFailShare is how much the requests that fail after a stage's last
// send (outside every window) may raise its error rate over the rate before
// it, before its windows no longer stand for it: 1 pp, error_rate's margin.
const drainFailShare = 0.01

// drainFailures counts the requests that failed from the second of the last
// send on, which no window holds (a server that hangs requests until they
// time out fails them there), and says how much they raise the error rate
// of all completions over that of the completions before.
func drainFailures(s *result.Series) (failed int, raise float64) {
	end := measuredEnd(s)
	var doneBefore, failedBefore, done int
	for i, n := range s.CompletedPerS {
		done += n
		if i < end {
			doneBefore, failedBefore = doneBefore+n, failedBefore+at(s.ErrorsPerS, i)
		} else {
			failed += at(s.ErrorsPerS, i)
		}
	}
	if done == 0 || failed == 0 {
		return failed, 0
	}
	before := 0.0
	if doneBefore > 0 {
		before = float64(failedBefore) / float64(doneBefore)
	}
	return failed, float64(failedBefore+failed)/float64(done) - before
}

// usable is the number of whole seconds windows can be cut from.
func usable(s *result.Series, skip int) int {
	return max(measuredEnd(s)-max(skip, 0), 0)
}

// Windows cuts the series into consecutive whole windows of sp.Window
// seconds after sp.Skip, up to the last second of sending, and returns the
// metric's aggregate of each. Windows in which no request completed are
// skipped, as are windows the metric finds nothing in; empty counts them.
func Windows(s *result.Series, sp Span, m Metric) (vals []float64, empty int) {
	vals, _, empty = windowSpans(s, sp, m)
	return vals, empty
}

// windowSpans is Windows with the first second of each window kept.
func windowSpans(s *result.Series, sp Span, m Metric) (vals []float64, starts []int, empty int) {
	if m.window == nil || sp.Window <= 0 || (m.has != nil && !m.has(s)) {
		return nil, nil, 0
	}
	end := measuredEnd(s)
	for a := max(sp.Skip, 0); a+sp.Window <= end; a += sp.Window {
		done := 0
		for i := a; i < a+sp.Window; i++ {
			done += at(s.CompletedPerS, i)
		}
		if done == 0 {
			empty++
			continue
		}
		v, ok := m.window(s, a, a+sp.Window)
		if !ok {
			empty++
			continue
		}
		vals, starts = append(vals, v), append(starts, a)
	}
	return vals, starts, empty
}

// secondLag1 is the lag-1 autocorrelation of a metric's per-second
// values, pooled over runs (each centred on its own mean): the products of
// neighbours over the squares. It is corrected for its small-sample bias
// (E[r] ≈ ρ − (1 + 3ρ)/n, so ρ ≈ r + (1 + 3r)/n) and clipped to
// [0, maxRho]; fewer than 5 values give 0.
func secondLag1(runs [][]float64) float64 {
	var num, den float64
	n := 0
	for _, xs := range runs {
		if len(xs) < 2 {
			continue
		}
		m := mean(xs)
		for i, x := range xs {
			d := x - m
			den += d * d
			if i+1 < len(xs) {
				num += d * (xs[i+1] - m)
			}
		}
		n += len(xs)
	}
	if n < 5 || den == 0 {
		return 0
	}
	r := num / den
	r += (1 + 3*r) / float64(n)
	return math.Max(0, math.Min(r, maxRho))
}

// maxRho caps the per-second autocorrelation allowed for: beyond it the
// seconds are too alike for any window to help.
const maxRho = 0.9

// windowLag1 is the lag-1 autocorrelation of the means of consecutive
// windows of w seconds of an AR(1) series whose seconds have lag-1
// autocorrelation phi: φ·((1 − φʷ)/(1 − φ))² over w + 2·Σₖ (w − k)·φᵏ.
func windowLag1(phi float64, w int) float64 {
	if phi <= 0 || w < 1 {
		return 0
	}
	sum := 0.0 // Σₖ φᵏ for k < w
	den := float64(w)
	p := 1.0
	for k := range w {
		sum += p
		if k > 0 {
			den += 2 * float64(w-k) * p
		}
		p *= phi
	}
	return phi * sum * sum / den
}

// inflation is the factor by which the variance of the mean of a series
// of windows with lag-1 autocorrelation rho exceeds that of independent
// values: (1 + ρ)/(1 − ρ).
func inflation(rho float64) float64 { return (1 + rho) / (1 - rho) }
