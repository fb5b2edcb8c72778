// Package resilience computes a stage's resilience figures from its
// per-second series (docs/design.md §3): the resilience slope, the median
// least-squares slope of P99 over a sliding window, and the recovery time,
// the time after a load step or a fault's end until the windowed P99 is
// back under its SLO. It holds computation only; the result types are in
// package result.
//
// Stage: verdict.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package resilience

import (
	"math"
	"slices"

	"github.com/spate-dev/spate/internal/binomial"
)

// Slope is the resilience slope of a per-second P99 series, in the
// series' unit per second: the median over every position of a sliding
// window of w seconds of the least-squares slope of P99 against time in
// that window. Seconds with no value (p99[i] ≤ 0 or no completions,
// has[i] false) are left out of a window's fit; a window needs at least
// half its seconds and at least 2. ok is false when no window qualifies.
func Slope(p99 []float64, has []bool, w int) (slope float64, windows int, ok bool) {
	if w < 2 {
		return 0, 0, false
	}
	var slopes []float64
	for a := 0; a+w <= len(p99); a++ {
		var n, sx, sy, sxx, sxy float64
		for i := a; i < a+w; i++ {
			if !present(p99, has, i) {
				continue
			}
			x, y := float64(i), p99[i]
			n++
			sx += x
			sy += y
			sxx += x * x
			sxy += x * y
		}
		if n < 2 || n < float64(w)/2 {
			continue
		}
		den := n*sxx - sx*sx
		if den == 0 {
			continue
		}
		slopes = append(slopes, (n*sxy-sx*sy)/den)
	}
	if len(slopes) == 0 {
		return 0, 0, false
	}
	return median(slopes), len(slopes), true
}

// Windowed is the P99 of the window [a, a+w): the mean of the per-second
// P99 values present in it weighted by the completions of each second
// (weights nil: unweighted). ok is false when the window holds none.
func Windowed(p99 []float64, weights []int, a, w int) (float64, bool) {
	var sum, n float64
	for i := max(a, 0); i < a+w && i < len(p99); i++ {
		wt := 1.0
		if weights != nil {
			if i >= len(weights) || weights[i] <= 0 {
				continue
			}
			wt = float64(weights[i])
		}
		if p99[i] <= 0 {
			continue
		}
		sum += wt * p99[i]
		n += wt
	}
	if n == 0 {
		return 0, false
	}
	return sum / n, true
}

// Errors are the failures a recovery is judged on beside the P99: the
// requests completed and failed each second, and the error rate (a
// fraction) a window must be surely over to have not recovered whatever
// its P99: surely, as the lower end of its 99 % Wilson interval, so that
// the chance errors of a healthy service do not hold a recovery back.
type Errors struct {
	Done, Failed []int
	Max          float64
}

// errorConfidence is the level of the Wilson interval a window's error
// rate is judged with (two-sided: its lower end is surely under the rate
// 99.5 % of the time).
const errorConfidence = 0.99

// over says whether the window of w seconds from a has surely more errors
// than e.Max; has is false when nothing completed in it.
func (e *Errors) over(a, w int) (over, has bool) {
	if e == nil {
		return false, false
	}
	var done, failed int
	for i := max(a, 0); i < a+w; i++ {
		done += at(e.Done, i)
		failed += at(e.Failed, i)
	}
	if done == 0 {
		return false, false
	}
	lo, _ := binomial.Wilson(failed, done, errorConfidence)
	return lo > e.Max, true
}

// Recovery is the time, in whole seconds from second event, until the
// windowed P99 (windows of w seconds, see Windowed) is back under slo and
// stays there: the smallest r ≥ 0 such that every window starting at
// event+r or later that holds values is ≤ slo. With errs, a window whose
// error rate is surely over errs.Max (see Errors) is over too, even with no P99 (every
// request in it failed): a service that fails fast has not recovered. It
// is 0 when the window was never over after the event; ok is false when
// it cannot be told (see RecoveryStatus).
func Recovery(p99 []float64, weights []int, errs *Errors, event, w int, slo float64) (seconds int, ok bool) {
	seconds, st := RecoveryStatus(p99, weights, errs, event, w, slo)
	return seconds, st == Recovered
}

// Recovery outcomes (RecoveryStatus).
const (
	// Recovered: a whole window under the SLO came after the last one
	// over it.
	Recovered = iota
	// NotRecovered: the last second with a figure was itself over the
	// SLO (or failing): the service had not recovered when the series
	// ended.
	NotRecovered
	// Unmeasured: the series ended less than one window after the last
	// second over the SLO, with the seconds since under it, or held no
	// whole window: too short to tell.
	Unmeasured
)

// RecoveryStatus is Recovery with why it has no time: whether the
// service had not recovered by the end of the series, or the series was
// too short after its last bad second to tell.
func RecoveryStatus(p99 []float64, weights []int, errs *Errors, event, w int, slo float64) (seconds, status int) {
	if w < 1 || event < 0 {
		return 0, Unmeasured
	}
	lastOver, any := -1, false
	for a := event; a+w <= len(p99); a++ {
		v, has := Windowed(p99, weights, a, w)
		failing, hasErr := errs.over(a, w)
		if !has && !hasErr {
			continue
		}
		any = true
		if (has && v > slo) || failing {
			lastOver = a
		}
	}
	if !any {
		return 0, Unmeasured
	}
	if lastOver < 0 {
		return 0, Recovered
	}
	// Recovered at the first window after the last one over the SLO, if
	// there is one.
	for a := lastOver + 1; a+w <= len(p99); a++ {
		_, has := Windowed(p99, weights, a, w)
		if _, hasErr := errs.over(a, w); has || hasErr {
			return a - event, Recovered
		}
	}
	// No whole window after it: the last second with a figure tells
	// whether the service was still over the SLO when the series ended.
	for i := len(p99) - 1; i >= max(lastOver, event); i-- {
		v, has := Windowed(p99, weights, i, 1)
		failing, hasErr := errs.over(i, 1)
		if !has && !hasErr {
			continue
		}
		if (has && v > slo) || failing {
			return 0, NotRecovered
		}
		return 0, Unmeasured
	}
	return 0, NotRecovered
}

func present(p99 []float64, has []bool, i int) bool {
	if p99[i] <= 0 || math.IsNaN(p99[i]) {
		return false
	}
	return has == nil || (i < len(has) && has[i])
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
