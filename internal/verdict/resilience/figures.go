package resilience

import (
	"fmt"
	"math"

	"github.com/spate-dev/spate/result"
)

// Defaults of Options.
const (
	DefaultSlopeWindow    = 10
	DefaultRecoveryWindow = 5
)

// Options say how a stage's figures are computed.
type Options struct {
	// SlopeWindow and RecoveryWindow are in seconds (0: the defaults).
	SlopeWindow, RecoveryWindow int
	// AfterFaults says the stage before this one had faults switched on,
	// so the stage's start is also a fault's end.
	AfterFaults bool
	// FaultEnds are further seconds, from the stage's start, at which a
	// fault ended within the stage.
	FaultEnds []float64
	// FaultStarts are the seconds, from the stage's start, at which a
	// fault began within the stage (0 for one already on at the start): a
	// recovery is judged only up to the next onset after its event, and
	// the load step's only when no fault began at the start.
	FaultStarts []float64
}

// BaselineFactor times the E2E p99 before a stage's first fault is the
// bound recovery is judged against when the stage has no SLO, taken over
// at least MinBaselineSeconds seconds with completions.
const (
	BaselineFactor     = 1.5
	MinBaselineSeconds = 2
)

// MaxErrorRise is how far over the error rate before a stage's first fault
// a window after a fault may surely be and count as recovered: two
// percentage points. MaxErrorRateUnknown is the error rate it may surely be
// when no second before a fault gives that rate (the stage after a fault
// stage, a fault from the start): 5 %.
const (
	MaxErrorRise        = 0.02
	MaxErrorRateUnknown = 0.05
)

// Figures computes a stage's resilience figures from its series and SLOs
// (slo, in ms, keyed "ttft", "e2e" as in result.Goodput.SLOms). It returns
// nil when the series is too short for a single slope window.
func Figures(s *result.Series, slo map[string]float64, o Options) *result.Resilience {
	if o.SlopeWindow <= 0 {
		o.SlopeWindow = DefaultSlopeWindow
	}
	if o.RecoveryWindow <= 0 {
		o.RecoveryWindow = DefaultRecoveryWindow
	}
	n := seconds(s)
	if n < o.SlopeWindow {
		return nil
	}
	r := &result.Resilience{SlopeWindowS: o.SlopeWindow}
	ttftHas, e2eHas := make([]bool, n), make([]bool, n)
	for i := range n {
		done := at(s.CompletedPerS, i)
		ttftHas[i] = done > 0
		e2eHas[i] = done-at(s.ErrorsPerS, i) > 0
	}
	if v, k, ok := Slope(cut(s.TTFTp99ms, n), ttftHas, o.SlopeWindow); ok {
		r.TTFTp99SlopeMSPerS, r.SlopeWindows = &v, k
	}
	if v, k, ok := Slope(cut(s.E2Ep99ms, n), e2eHas, o.SlopeWindow); ok {
		r.E2Ep99SlopeMSPerS, r.SlopeWindows = &v, max(r.SlopeWindows, k)
	}
	if r.TTFTp99SlopeMSPerS == nil && r.E2Ep99SlopeMSPerS == nil {
		r.Warnings = append(r.Warnings, "too few seconds with completions for a resilience slope")
	}
	errPct := make([]float64, n)
	for i := range n {
		if done := at(s.CompletedPerS, i); done > 0 {
			// A second with no error is a value (0 %), not a gap: Slope
			// skips values ≤ 0, so errors are shifted by 1 pp and back.
			errPct[i] = 1 + 100*float64(at(s.ErrorsPerS, i))/float64(done)
		}
	}
	if v, _, ok := Slope(errPct, ttftHas, o.SlopeWindow); ok {
		v *= 60 // percentage points per second → per minute
		r.ErrorRateSlopePPPerMin = &v
	}
	var p99 []float64
	e2eWeights := make([]int, n)
	for i := range n {
		e2eWeights[i] = at(s.CompletedPerS, i) - at(s.ErrorsPerS, i)
	}
	weights := e2eWeights
	firstOnset := n
	for _, f := range o.FaultStarts {
		firstOnset = min(firstOnset, max(int(f), 0))
	}
	switch {
	case slo["ttft"] > 0:
		r.SLOMetric, r.SLOms, p99 = "ttft", slo["ttft"], cut(s.TTFTp99ms, n)
		weights = cutInts(s.CompletedPerS, n)
	case slo["e2e"] > 0:
		r.SLOMetric, r.SLOms, p99 = "e2e", slo["e2e"], cut(s.E2Ep99ms, n)
	case len(o.FaultEnds) > 0 || o.AfterFaults:
		// No SLO: the bound is the stage's own E2E p99 before its first
		// fault (the median of its seconds), times 1.5.
		p99 = cut(s.E2Ep99ms, n)
		var base []float64
		for i := 0; i < firstOnset && i < len(p99); i++ {
			if e2eHas[i] && p99[i] > 0 {
				base = append(base, p99[i])
			}
		}
		if len(base) < MinBaselineSeconds || o.AfterFaults {
			r.Warnings = append(r.Warnings, fmt.Sprintf("no recovery time: no SLO, and fewer than %d seconds before the first fault to take a baseline from (give --slo)", MinBaselineSeconds))
			return r
		}
		r.SLOMetric, r.SLOms, r.SLOSource = "e2e", BaselineFactor*median(base), "baseline"
	default:
		return r // no SLO and no fault: no recovery time
	}
	r.RecoveryWindowS = o.RecoveryWindow
	// After a fault, a window whose error rate is surely over the stage's
	// before its first fault by more than MaxErrorRise has not recovered
	// (as in the chaos section's recovery); with no seconds before a fault
	// to take it from, over MaxErrorRateUnknown.
	errs := &Errors{Done: cutInts(s.CompletedPerS, n), Failed: cutInts(s.ErrorsPerS, n), Max: MaxErrorRateUnknown}
	var done, failed int
	for i := 0; i < firstOnset && !o.AfterFaults; i++ {
		done, failed = done+at(s.CompletedPerS, i), failed+at(s.ErrorsPerS, i)
	}
	if done > 0 {
		errs.Max = float64(failed)/float64(done) + MaxErrorRise
	}
	// nextOnset is the first fault onset after second at (n if none).
	nextOnset := func(at int) int {
		next := n
		for _, f := range o.FaultStarts {
			if s := int(math.Ceil(f)); s > at {
				next = min(next, s)
			}
		}
		return next
	}
	switch {
	case o.AfterFaults:
		r.Recoveries = append(r.Recoveries, recovery(p99, weights, errs, "fault_end", 0, nextOnset(0), o.RecoveryWindow, r.SLOms))
	case firstOnset > 0:
		// The load step's recovery, judged before any fault began.
		r.Recoveries = append(r.Recoveries, recovery(p99, weights, nil, "load_step", 0, firstOnset, o.RecoveryWindow, r.SLOms))
	}
	for _, end := range o.FaultEnds {
		// Judged from the first whole second after the window's end (10 ms
		// of slack for the proxy's timing), measured from the end itself.
		at := int(math.Ceil(end - 0.01))
		if at >= n {
			continue
		}
		rec := recovery(p99, weights, errs, "fault_end", at, nextOnset(at), o.RecoveryWindow, r.SLOms)
		rec.AtS, rec.RecoveryS = math.Round(1000*end)/1000, math.Round(1000*(rec.RecoveryS+float64(at)-end))/1000
		r.Recoveries = append(r.Recoveries, rec)
	}
	return r
}

// recovery is the recovery from second at, judged on the seconds before
// end (and, with errs, on their error rate).
func recovery(p99 []float64, weights []int, errs *Errors, event string, at, end, w int, slo float64) result.Recovery {
	rec := result.Recovery{Event: event, AtS: float64(at)}
	end = min(end, len(p99))
	switch s, st := RecoveryStatus(p99[:end], cutInts(weights, end), errs, at, w, slo); st {
	case Recovered:
		rec.Recovered, rec.RecoveryS = true, float64(s)
	default:
		rec.RecoveryS = float64(max(end-at, 0))
		rec.Unmeasured = st == Unmeasured
	}
	return rec
}

// seconds is the number of whole seconds of load in the series: up to the
// last second in which a request was sent (that second is partial, and
// the drain after it carries no load).
func seconds(s *result.Series) int {
	for i := len(s.SentPerS) - 1; i >= 0; i-- {
		if s.SentPerS[i] > 0 {
			return i
		}
	}
	return 0
}

func cut(xs []float64, n int) []float64 { return xs[:min(n, len(xs))] }

func cutInts(xs []int, n int) []int { return xs[:min(n, len(xs))] }

func at(xs []int, i int) int {
	if i < len(xs) {
		return xs[i]
	}
	return 0
}
