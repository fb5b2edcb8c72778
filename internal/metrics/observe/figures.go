package observe

import (
	"fmt"
	"math"
	"sort"

	"github.com/spate-dev/spate/result"
)

// FullKV is the KV cache usage from which the cache counts as full.
const FullKV = 0.99

// Figures derives a stage's figures from its server series and the
// client's TTFT p99 per second of the stage (of the requests sent in that
// second; NaN or 0 where none):
//
//   - kv_cache_usage_peak, kv_cache_usage_mean, kv_cache_full_s (seconds
//     at ≥ 99 % usage);
//   - requests_waiting_mean / _peak, requests_running_mean / _peak;
//   - preemptions: the count over the stage, from the rate series;
//   - queue_ttft_p99_pearson: Pearson's r between the queue depth
//     (requests_waiting, averaged per second of the stage) and the TTFT
//     p99 of the requests sent in the same second, with a 95 % interval
//     (_lo95, _hi95) from Fisher's z on an effective sample size that
//     discounts the series' lag-1 autocorrelation (_n_eff; _pairs is the
//     number of seconds paired).
//
// Means and durations hold each scrape's value until the next scrape. The
// warnings say why a figure is missing or weak.
func Figures(offsets []float64, series map[string]result.ServerSeries, ttftP99 []float64) (map[string]float64, []string) {
	fig := map[string]float64{}
	var warns []string
	if s, ok := series["kv_cache_usage"]; ok {
		if v, ok := peak(s.Values); ok {
			fig["kv_cache_usage_peak"] = v
		}
		if v, ok := heldMean(offsets, s.Values); ok {
			fig["kv_cache_usage_mean"] = v
		}
		fig["kv_cache_full_s"] = heldTime(offsets, s.Values, func(v float64) bool { return v >= FullKV })
	}
	for _, name := range []string{"requests_waiting", "requests_running"} {
		s, ok := series[name]
		if !ok {
			continue
		}
		if v, ok := peak(s.Values); ok {
			fig[name+"_peak"] = v
		}
		if v, ok := heldMean(offsets, s.Values); ok {
			fig[name+"_mean"] = v
		}
	}
	if s, ok := series["preemptions_per_s"]; ok {
		var n float64
		for i := 1; i < len(offsets); i++ {
			if s.Values[i] != nil {
				n += *s.Values[i] * (offsets[i] - offsets[i-1])
			}
		}
		fig["preemptions"] = math.Round(n)
	}
	if s, ok := series["requests_waiting"]; ok {
		w := queueTTFT(offsets, s.Values, ttftP99, fig)
		warns = append(warns, w...)
	}
	return fig, warns
}

// peak is the largest value present.
func peak(vals []*float64) (float64, bool) {
	best, ok := math.Inf(-1), false
	for _, v := range vals {
		if v != nil && *v > best {
			best, ok = *v, true
		}
	}
	return best, ok
}

// heldMean is the time-weighted mean of the values, each held until the
// next scrape; with a single value, that value.
func heldMean(offsets []float64, vals []*float64) (float64, bool) {
	var sum, w float64
	for i := 0; i+1 < len(vals); i++ {
		if vals[i] == nil {
			continue
		}
		dt := offsets[i+1] - offsets[i]
		sum += *vals[i] * dt
		w += dt
	}
	if w > 0 {
		return sum / w, true
	}
	for _, v := range vals {
		if v != nil {
			return *v, true
		}
	}
	return 0, false
}

// heldTime is the time during which the held value satisfied cond.
func heldTime(offsets []float64, vals []*float64, cond func(float64) bool) float64 {
	var t float64
	for i := 0; i+1 < len(vals); i++ {
		if vals[i] != nil && cond(*vals[i]) {
			t += offsets[i+1] - offsets[i]
		}
	}
	return t
}

// perSecond averages the scraped values whose offsets fall in each second
// [k, k+1) of the stage, for n seconds; NaN where none did.
func perSecond(offsets []float64, vals []*float64, n int) []float64 {
	sum := make([]float64, n)
	cnt := make([]int, n)
	for i, off := range offsets {
		k := int(math.Floor(off))
		if vals[i] == nil || k < 0 || k >= n {
			continue
		}
		sum[k] += *vals[i]
		cnt[k]++
	}
	out := make([]float64, n)
	for k := range out {
		out[k] = math.NaN()
		if cnt[k] > 0 {
			out[k] = sum[k] / float64(cnt[k])
		}
	}
	return out
}

// queueTTFT adds the correlation of queue depth with the client's TTFT
// p99 per second to fig.
func queueTTFT(offsets []float64, waiting []*float64, ttftP99 []float64, fig map[string]float64) []string {
	q := perSecond(offsets, waiting, len(ttftP99))
	var xs, ys []float64
	for k, v := range q {
		if math.IsNaN(v) || math.IsNaN(ttftP99[k]) || ttftP99[k] <= 0 {
			continue // no scrape, or no request with a first token, in that second
		}
		xs = append(xs, v)
		ys = append(ys, ttftP99[k])
	}
	const what = "correlation of server queue depth with client TTFT p99"
	if len(xs) < 3 {
		return []string{fmt.Sprintf("%s: not computed, %d seconds had both (need 3)", what, len(xs))}
	}
	r, ok := pearson(xs, ys)
	if !ok {
		return []string{fmt.Sprintf("%s: not computed, one of the two was constant over the stage", what)}
	}
	fig["queue_ttft_p99_pearson"] = r
	fig["queue_ttft_p99_pairs"] = float64(len(xs))
	neff := effectiveN(xs, ys)
	fig["queue_ttft_p99_n_eff"] = neff
	if neff <= 3 {
		return []string{fmt.Sprintf("%s: r = %.2f on %d seconds, but they are so autocorrelated that they count as %.1f independent ones: no interval; run longer", what, r, len(xs), neff)}
	}
	z := math.Atanh(math.Max(-0.999999, math.Min(0.999999, r)))
	se := 1 / math.Sqrt(neff-3)
	fig["queue_ttft_p99_pearson_lo95"] = math.Tanh(z - 1.959964*se)
	fig["queue_ttft_p99_pearson_hi95"] = math.Tanh(z + 1.959964*se)
	if neff < 10 {
		return []string{fmt.Sprintf("%s: only %.1f effective seconds (of %d): the interval is wide; run longer", what, neff, len(xs))}
	}
	return nil
}

// pearson is Pearson's correlation coefficient; false when either sample
// has no variance.
func pearson(xs, ys []float64) (float64, bool) {
	mx, my := mean(xs), mean(ys)
	var sxy, sxx, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0, false
	}
	return sxy / math.Sqrt(sxx*syy), true
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// lag1 is the lag-1 autocorrelation of xs.
func lag1(xs []float64) float64 {
	m := mean(xs)
	var num, den float64
	for i, x := range xs {
		den += (x - m) * (x - m)
		if i > 0 {
			num += (x - m) * (xs[i-1] - m)
		}
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// effectiveN is the number of independent pairs that n autocorrelated
// ones are worth for a correlation (Bartlett: n·(1−ρx·ρy)/(1+ρx·ρy)),
// never more than n.
func effectiveN(xs, ys []float64) float64 {
	n := float64(len(xs))
	p := lag1(xs) * lag1(ys)
	return math.Min(n, n*(1-p)/(1+p))
}

// P99PerSecond is the 99th percentile (nearest rank) of each second's
// values; NaN for a second without any.
func P99PerSecond(bySec [][]float64) []float64 {
	out := make([]float64, len(bySec))
	for k, vs := range bySec {
		out[k] = math.NaN()
		if len(vs) == 0 {
			continue
		}
		s := append([]float64(nil), vs...)
		sort.Float64s(s)
		rank := int(math.Ceil(0.99*float64(len(s)))) - 1
		out[k] = s[max(rank, 0)]
	}
	return out
}
