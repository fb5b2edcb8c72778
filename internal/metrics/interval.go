package metrics

import (
	"fmt"
	"math"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/spate-dev/spate/internal/binomial"
	"github.com/spate-dev/spate/result"
)

// The sampling intervals (docs/figures.md, "Sampling intervals"): where a
// figure's true value lies, at IntervalLevel confidence, given that a run
// draws a sample of the server's behaviour. A percentile's interval lies
// between two order statistics of the samples (binomial.QuantileRanks:
// distribution-free, no shape assumed); a goodput fraction's is Wilson's;
// the throughput's is the exact Poisson interval of its count over the
// window. Each takes a stage's requests as independent draws, which a
// queue makes them not quite (a slow second makes its neighbours slow):
// the intervals say how noisy the sample is, and the comparison of runs
// (spate compare) tests windows of seconds for that reason.

// IntervalLevel is the confidence of every sampling interval.
const IntervalLevel = 0.95

// intervalMetrics are the distributions whose percentiles get intervals.
var intervalMetrics = []string{TTFT, TTFTIntended, ITL, TPOT, E2E, E2EIntended}

// FillIntervals sets sc.Intervals from its histograms (encoded, as in the
// result) and its counts.
func FillIntervals(sc *result.Scenario, hists map[string]string) {
	iv := &result.Intervals{Level: IntervalLevel, Metrics: map[string]result.PercentileIntervals{}}
	for _, k := range intervalMetrics {
		h := decoded(hists, k)
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		iv.Metrics[k] = result.PercentileIntervals{
			P50: percentileInterval(h, 50), P90: percentileInterval(h, 90), P99: percentileInterval(h, 99),
		}
	}
	if done := sc.Requests.Succeeded + sc.Requests.Failed; done > 0 {
		iv.Goodput = wilson(sc.Goodput.Fraction, done)
		iv.GoodputIntended = wilson(sc.Goodput.IntendedFraction, done)
	}
	if k, rps := sc.Requests.Succeeded, sc.Throughput.RequestsPerS; k > 0 && rps > 0 {
		window := float64(k) / rps
		lo, hi := poisson(k, IntervalLevel)
		iv.RequestsPerS = &result.Range{Low: lo / window, High: hi / window}
	}
	sc.Intervals = iv
}

// percentileInterval is the order-statistic interval of h's pct-th
// percentile, in ms; nil when the samples are too few for both ends.
func percentileInterval(h *hdr.Histogram, pct float64) *result.Range {
	n := int(h.TotalCount())
	lo, hi := binomial.QuantileRanks(n, pct/100, IntervalLevel)
	if lo < 1 || hi > n {
		return nil
	}
	at := func(rank int) float64 {
		return float64(h.ValueAtPercentile(100*(float64(rank)-0.5)/float64(n))) / 1000
	}
	return &result.Range{Low: at(lo), High: at(hi)}
}

// wilson is the Wilson interval of a fraction of n.
func wilson(frac float64, n int) *result.Range {
	lo, hi := binomial.Wilson(int(math.Round(frac*float64(n))), n, IntervalLevel)
	return &result.Range{Low: lo, High: hi}
}

// poisson is the exact (Garwood) interval of a Poisson mean given k events
// at confidence conf.
func poisson(k int, conf float64) (lo, hi float64) {
	tail := (1 - conf) / 2
	if k > 0 {
		lo = distuv.Gamma{Alpha: float64(k), Beta: 1}.Quantile(tail)
	}
	hi = distuv.Gamma{Alpha: float64(k + 1), Beta: 1}.Quantile(1 - tail)
	return lo, hi
}

// Interval returns a figure's sampling interval (asked as Lookup is): any
// percentile of a distribution, from its histogram; goodput and the
// request rate, from sc.Intervals. ok is false when it has none.
func Interval(sc *result.Scenario, hist map[string]string, agg string, percentile float64, metric string) (lo, hi float64, ok bool) {
	if agg == "" {
		var r *result.Range
		if iv := sc.Intervals; iv != nil {
			switch metric {
			case "goodput", "goodput_sent":
				r = iv.Goodput
			case "goodput_intended":
				r = iv.GoodputIntended
			case "rps":
				r = iv.RequestsPerS
			}
		}
		if r == nil {
			return 0, 0, false
		}
		return r.Low, r.High, true
	}
	if agg != "percentile" || strings.Contains(metric, "@input:") {
		return 0, 0, false
	}
	if metric == TokensPerChunk {
		return 0, 0, false
	}
	h := decoded(hist, distKey(metric))
	if h == nil || h.TotalCount() == 0 {
		return 0, 0, false
	}
	r := percentileInterval(h, percentile)
	if r == nil {
		return 0, 0, false
	}
	return r.Low, r.High, true
}

// Interval returns a figure's sampling interval (see the package's
// Interval).
func (s Source) Interval(agg string, percentile float64, metric string) (lo, hi float64, ok bool) {
	return Interval(s.Scenario, s.Hists, agg, percentile, metric)
}

// IntervalText says in words a stage's main sampling intervals (TTFT, ITL
// and E2E p50 and p99, goodput and throughput); "" when it has none.
func IntervalText(iv *result.Intervals) string {
	if iv == nil {
		return ""
	}
	var parts []string
	for _, row := range []struct{ key, name string }{{TTFT, "TTFT"}, {ITL, "ITL"}, {E2E, "E2E"}} {
		p, ok := iv.Metrics[row.key]
		if !ok {
			continue
		}
		var ps []string
		for _, q := range []struct {
			name string
			r    *result.Range
		}{{"p50", p.P50}, {"p99", p.P99}} {
			if q.r != nil {
				ps = append(ps, fmt.Sprintf("%s [%.4g, %.4g]", q.name, q.r.Low, q.r.High))
			} else {
				ps = append(ps, q.name+" — (too few requests)")
			}
		}
		if len(ps) > 0 {
			parts = append(parts, row.name+" "+strings.Join(ps, " "))
		}
	}
	if g := iv.Goodput; g != nil {
		parts = append(parts, fmt.Sprintf("goodput [%.1f %%, %.1f %%]", 100*g.Low, 100*g.High))
	}
	if r := iv.RequestsPerS; r != nil {
		parts = append(parts, fmt.Sprintf("throughput [%.4g, %.4g] req/s", r.Low, r.High))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f %% (ms): %s", 100*iv.Level, strings.Join(parts, ", "))
}
