// Package compare turns two sets of spate results, a base and a new one,
// into verdicts with confidence: for every stage and metric, the change
// with a confidence interval and improved, regressed or no significant
// change (docs/design.md §3: requests of one run are not independent, so the
// tests run on window aggregates of the per-second series, or on repeated
// runs, never on raw requests).
//
// Stage: verdict (over runs compared).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package compare

import "github.com/spate-dev/spate/result"

// Metric is one figure compare can judge.
type Metric struct {
	// Name is the metric's key (--metric, --gate).
	Name string
	// Unit is printed after values: "ms", "req/s", "tok/s" or "" (a fraction).
	Unit string
	// HigherIsBetter says which direction is an improvement.
	HigherIsBetter bool
	// window aggregates seconds [a, b) of a series; ok is false when the
	// window holds nothing to measure.
	window func(s *result.Series, a, b int) (v float64, ok bool)
	// run is the figure of a whole scenario (used across repeated runs).
	run func(sc *result.Scenario) (v float64, ok bool)
}

// Metrics lists every metric compare knows, in the order they are printed.
var Metrics = []Metric{
	latency("ttft_p50_ms", "ttft_ms", func(s *result.Series) []float64 { return s.TTFTp50ms }, true, func(d result.Dist) float64 { return d.P50 }),
	latency("ttft_p99_ms", "ttft_ms", func(s *result.Series) []float64 { return s.TTFTp99ms }, true, func(d result.Dist) float64 { return d.P99 }),
	latency("ttft_mean_ms", "ttft_ms", func(s *result.Series) []float64 { return s.TTFTMeanMS }, true, func(d result.Dist) float64 { return d.Mean }),
	latency("e2e_p50_ms", "e2e_ms", func(s *result.Series) []float64 { return s.E2Ep50ms }, false, func(d result.Dist) float64 { return d.P50 }),
	latency("e2e_p99_ms", "e2e_ms", func(s *result.Series) []float64 { return s.E2Ep99ms }, false, func(d result.Dist) float64 { return d.P99 }),
	latency("e2e_mean_ms", "e2e_ms", func(s *result.Series) []float64 { return s.E2EMeanMS }, false, func(d result.Dist) float64 { return d.Mean }),
	{
		Name: "throughput_rps", Unit: "req/s", HigherIsBetter: true,
		window: func(s *result.Series, a, b int) (float64, bool) {
			ok := 0
			for i := a; i < b; i++ {
				ok += at(s.CompletedPerS, i) - at(s.ErrorsPerS, i)
			}
			return float64(ok) / float64(b-a), true
		},
		run: func(sc *result.Scenario) (float64, bool) { return sc.Throughput.RequestsPerS, sc.Requests.Total > 0 },
	},
	{
		Name: "output_tps", Unit: "tok/s", HigherIsBetter: true,
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
	{
		Name: "error_rate", Unit: "",
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
	{
		// Goodput has no per-second series: it is judged across repeated
		// runs only.
		Name: "goodput", Unit: "", HigherIsBetter: true,
		run: func(sc *result.Scenario) (float64, bool) {
			return sc.Goodput.Fraction, sc.Requests.Total > 0 && len(sc.Goodput.SLOms) > 0
		},
	},
}

// DefaultGate lists the metrics whose regression fails spate compare
// (exit 3) unless --gate says otherwise: tail latency, throughput, errors
// and goodput, the figures a user feels, and the capacity of capacity
// searches.
var DefaultGate = []string{"ttft_p99_ms", "e2e_p99_ms", "throughput_rps", "error_rate", "goodput", CapacityMetric}

// MetricByName returns the named metric.
func MetricByName(name string) (Metric, bool) {
	for _, m := range Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// latency is a latency metric: the per-second values of a window weighted
// by the requests that completed in each second (TTFT counts every
// completed request that got a first token, E2E the succeeded ones).
func latency(name, dist string, col func(*result.Series) []float64, ttft bool, pick func(result.Dist) float64) Metric {
	return Metric{
		Name: name, Unit: "ms",
		window: func(s *result.Series, a, b int) (float64, bool) {
			vals := col(s)
			var sum, w float64
			for i := a; i < b; i++ {
				n := at(s.CompletedPerS, i)
				if !ttft {
					n -= at(s.ErrorsPerS, i)
				}
				if n <= 0 || i >= len(vals) || vals[i] <= 0 {
					continue
				}
				sum += vals[i] * float64(n)
				w += float64(n)
			}
			if w == 0 {
				return 0, false
			}
			return sum / w, true
		},
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
