// Package compare turns two sets of spate results, a base and a new one,
// into verdicts with confidence: for every stage and metric, the change
// with a confidence interval, its practical margin, and improved,
// regressed, no change, or "cannot tell" (docs/design.md §3: requests of
// one run are not independent, so the tests run on window aggregates of
// the per-second series, or on repeated runs, never on raw requests).
//
// Stage: verdict (over runs compared).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package compare

import (
	"math"

	"github.com/spate-dev/spate/result"
)

// Metric is one figure compare can judge.
type Metric struct {
	// Name is the metric's key (--metric, --gate, --min-effect).
	Name string
	// Unit is printed after values: "ms", "req/s", "tok/s", "ms/s", "s",
	// "pp/min" or "" (a fraction, printed as a percentage).
	Unit string
	// HigherIsBetter says which direction is an improvement.
	HigherIsBetter bool
	// Diff says the change is new − base (fractions and figures that sit
	// near zero), not new/base − 1.
	Diff bool
	// MinEffect is the default practical margin: a significant change no
	// larger than it is called no change. A ratio for relative metrics
	// (0.05 = 5 %), in the metric's own unit for Diff metrics (0.01 of a
	// fraction = 1 percentage point).
	MinEffect float64
	// window aggregates seconds [a, b) of a series; ok is false when the
	// window holds nothing to measure.
	window func(s *result.Series, a, b int) (v float64, ok bool)
	// has says whether a series carries the metric's columns at all (a
	// result written by an older spate may not).
	has func(s *result.Series) bool
	// run is the figure of a whole scenario (used across repeated runs).
	run func(sc *result.Scenario) (v float64, ok bool)
	// dist and stat name a latency's distribution (a key of
	// Scenario.Metrics and of MeasurementError.Figures) and which of its
	// figures the metric is ("p50", "p99", "mean"); empty for the others.
	dist, stat string
	// weights are the weights of seconds [a, b) in the window's value
	// (a latency's: the requests each second's value is of, 0 for a second
	// left out), for how far late samples can move it (see errorShift).
	weights func(s *result.Series, a, b int) []float64
}

// Margins of the metrics (docs/compare.md).
const (
	latencyMargin    = 0.05 // 5 % of a latency
	throughputMargin = 0.05 // 5 % of a rate
	fractionMargin   = 0.01 // 1 percentage point of error rate or goodput
)

// latencyCols are the per-second columns of one latency.
type latencyCols struct {
	name, dist     string
	p50, p99, mean func(*result.Series) []float64
	// weight counts the requests a second's value is of: completions
	// (TTFT) or successes (the rest).
	successes bool
}

var latencyFamilies = []latencyCols{
	{"ttft", "ttft_ms", func(s *result.Series) []float64 { return s.TTFTp50ms }, func(s *result.Series) []float64 { return s.TTFTp99ms }, func(s *result.Series) []float64 { return s.TTFTMeanMS }, false},
	{"itl", "itl_ms", func(s *result.Series) []float64 { return s.ITLp50ms }, func(s *result.Series) []float64 { return s.ITLp99ms }, func(s *result.Series) []float64 { return s.ITLMeanMS }, true},
	{"tpot", "tpot_ms", func(s *result.Series) []float64 { return s.TPOTp50ms }, func(s *result.Series) []float64 { return s.TPOTp99ms }, func(s *result.Series) []float64 { return s.TPOTMeanMS }, true},
	{"e2e", "e2e_ms", func(s *result.Series) []float64 { return s.E2Ep50ms }, func(s *result.Series) []float64 { return s.E2Ep99ms }, func(s *result.Series) []float64 { return s.E2EMeanMS }, true},
	{"ttft_intended", "ttft_intended_ms", func(s *result.Series) []float64 { return s.TTFTIntendedP50ms }, func(s *result.Series) []float64 { return s.TTFTIntendedP99ms }, func(s *result.Series) []float64 { return s.TTFTIntendedMeanMS }, true},
	{"e2e_intended", "e2e_intended_ms", func(s *result.Series) []float64 { return s.E2EIntendedP50ms }, func(s *result.Series) []float64 { return s.E2EIntendedP99ms }, func(s *result.Series) []float64 { return s.E2EIntendedMeanMS }, true},
}

// Metrics lists every metric compare knows, in the order they are printed.
var Metrics = buildMetrics()

func buildMetrics() []Metric {
	var ms []Metric
	for _, f := range latencyFamilies {
		ms = append(ms,
			latency(f.name+"_p50_ms", f.dist, "p50", f.p50, f.successes, func(d result.Dist) float64 { return d.P50 }),
			latency(f.name+"_p99_ms", f.dist, "p99", f.p99, f.successes, func(d result.Dist) float64 { return d.P99 }),
			latency(f.name+"_mean_ms", f.dist, "mean", f.mean, f.successes, func(d result.Dist) float64 { return d.Mean }))
	}
	ms = append(ms,
		Metric{
			// Goodput: the fraction of completed requests that succeeded
			// within every SLO (docs/design.md §3).
			Name: "goodput", Unit: "", HigherIsBetter: true, Diff: true, MinEffect: fractionMargin,
			window: func(s *result.Series, a, b int) (float64, bool) {
				done, good := 0, 0
				for i := a; i < b; i++ {
					done += at(s.CompletedPerS, i)
					good += at(s.GoodPerS, i)
				}
				if done == 0 {
					return 0, false
				}
				return float64(good) / float64(done), true
			},
			has: func(s *result.Series) bool { return len(s.GoodPerS) > 0 },
			run: func(sc *result.Scenario) (float64, bool) {
				return sc.Goodput.Fraction, sc.Requests.Total > 0 && len(sc.Goodput.SLOms) > 0
			},
		},
		Metric{
			Name: "throughput_rps", Unit: "req/s", HigherIsBetter: true, MinEffect: throughputMargin,
			window: func(s *result.Series, a, b int) (float64, bool) {
				ok := 0
				for i := a; i < b; i++ {
					ok += at(s.CompletedPerS, i) - at(s.ErrorsPerS, i)
				}
				return float64(ok) / float64(b-a), true
			},
			run: func(sc *result.Scenario) (float64, bool) { return sc.Throughput.RequestsPerS, sc.Requests.Total > 0 },
		},
		Metric{
			Name: "output_tps", Unit: "tok/s", HigherIsBetter: true, MinEffect: throughputMargin,
			window: func(s *result.Series, a, b int) (float64, bool) {
				var n int64
				for i := a; i < b; i++ {
					if i < len(s.OutputTokens) {
						n += s.OutputTokens[i]
					}
				}
				return float64(n) / float64(b-a), true
			},
			run: func(sc *result.Scenario) (float64, bool) {
				return sc.Throughput.OutputTokensPerS, sc.Requests.Total > 0
			},
		},
		Metric{
			Name: "error_rate", Unit: "", Diff: true, MinEffect: fractionMargin,
			window: func(s *result.Series, a, b int) (float64, bool) {
				done, failed := 0, 0
				for i := a; i < b; i++ {
					done += at(s.CompletedPerS, i)
					failed += at(s.ErrorsPerS, i)
				}
				if done == 0 {
					return 0, false
				}
				return float64(failed) / float64(done), true
			},
			run: func(sc *result.Scenario) (float64, bool) {
				n := sc.Requests.Succeeded + sc.Requests.Failed
				if n == 0 {
					return 0, false
				}
				return float64(sc.Requests.Failed) / float64(n), true
			},
		},
	)
	return append(ms, resilienceMetrics...)
}

// DefaultGate lists the metrics whose regression fails spate compare
// (exit 3) unless --gate says otherwise: what users mean by a regression,
// the centre (p50) and the tail (p99) of TTFT, of the stream's speed (ITL
// and TPOT) and of E2E, goodput and errors, and the capacity of capacity
// searches. A tail alone misses a stream slower in every token when the
// tail is the client's jitter (ITL p99 on a busy machine), and a centre
// alone misses a longer tail. They are judged as one family
// (Holm–Bonferroni, see applyHolm), so gating more of them does not add
// false reds.
var DefaultGate = []string{
	"ttft_p50_ms", "ttft_p99_ms",
	"itl_p50_ms", "itl_p99_ms", "tpot_p50_ms", "tpot_p99_ms",
	"e2e_p50_ms", "e2e_p99_ms",
	"goodput", "error_rate", CapacityMetric,
}

// MetricByName returns the named metric.
func MetricByName(name string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Name == name {
			return m, true
		}
	}
	if name == CapacityMetric {
		return capacityMetric, true
	}
	return Metric{}, false
}

// latency is a latency metric: the per-second values of a window weighted
// by the requests that completed in each second (TTFT counts every
// completed request that got a first token, the others the succeeded ones).
func latency(name, dist, stat string, col func(*result.Series) []float64, successes bool, pick func(result.Dist) float64) Metric {
	// weight is the weight of second i in a window's value, 0 when it is
	// left out.
	weight := func(s *result.Series, vals []float64, i int) float64 {
		n := at(s.CompletedPerS, i)
		if successes {
			n -= at(s.ErrorsPerS, i)
		}
		if n <= 0 || i >= len(vals) || vals[i] <= 0 {
			return 0
		}
		return float64(n)
	}
	return Metric{
		Name: name, Unit: "ms", MinEffect: latencyMargin, dist: dist, stat: stat,
		window: func(s *result.Series, a, b int) (float64, bool) {
			vals := col(s)
			var sum, w float64
			for i := a; i < b; i++ {
				if n := weight(s, vals, i); n > 0 {
					sum += vals[i] * n
					w += n
				}
			}
			if w == 0 {
				return 0, false
			}
			return sum / w, true
		},
		weights: func(s *result.Series, a, b int) []float64 {
			vals := col(s)
			ws := make([]float64, 0, b-a)
			for i := a; i < b; i++ {
				ws = append(ws, weight(s, vals, i))
			}
			return ws
		},
		has: func(s *result.Series) bool { return len(col(s)) > 0 },
		run: func(sc *result.Scenario) (float64, bool) {
			d, ok := sc.Metrics[dist]
			if !ok || d.Count == 0 {
				return 0, false
			}
			return pick(d), true
		},
	}
}

func at(xs []int, i int) int {
	if i < len(xs) {
		return xs[i]
	}
	return 0
}

// finite reports whether x is a number.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
