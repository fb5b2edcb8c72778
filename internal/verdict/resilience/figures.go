package resilience

import "github.com/spate-dev/spate/result"

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
}

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
	var p99 []float64
	var weights []int
	switch {
	case slo["ttft"] > 0:
		r.SLOMetric, r.SLOms, p99 = "ttft", slo["ttft"], cut(s.TTFTp99ms, n)
		weights = cutInts(s.CompletedPerS, n)
	case slo["e2e"] > 0:
		r.SLOMetric, r.SLOms, p99 = "e2e", slo["e2e"], cut(s.E2Ep99ms, n)
		weights = make([]int, n)
		for i := range n {
			weights[i] = at(s.CompletedPerS, i) - at(s.ErrorsPerS, i)
		}
	default:
		return r // no SLO: no recovery time
	}
	r.RecoveryWindowS = o.RecoveryWindow
	event := "load_step"
	if o.AfterFaults {
		event = "fault_end"
	}
	r.Recoveries = append(r.Recoveries, recovery(p99, weights, event, 0, o.RecoveryWindow, r.SLOms))
	for _, at := range o.FaultEnds {
		r.Recoveries = append(r.Recoveries, recovery(p99, weights, "fault_end", int(at), o.RecoveryWindow, r.SLOms))
	}
	return r
}

func recovery(p99 []float64, weights []int, event string, at, w int, slo float64) result.Recovery {
	rec := result.Recovery{Event: event, AtS: float64(at)}
	if s, ok := Recovery(p99, weights, at, w, slo); ok {
		rec.Recovered, rec.RecoveryS = true, float64(s)
	} else {
		rec.RecoveryS = float64(max(len(p99)-at, 0))
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
