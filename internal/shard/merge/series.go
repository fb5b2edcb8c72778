package merge

import (
	"time"

	"github.com/spate-dev/spate/result"
)

// seriesPart is one shard's per-second series and the wall-clock time its
// second 0 began.
type seriesPart struct {
	start time.Time
	s     result.Series
}

// seriesNote is the caveat merged per-second series carry.
const seriesNote = "per-second series merged by wall clock: counts and tokens are exact sums; per second, in_flight_max " +
	"(sum of the shards' maxima) and latency p50/p99 (the largest shard's) are upper bounds and latency means are " +
	"weighted by completions; whole-stage percentiles are exact"

// mergeSeries sums the shards' series on a common time line starting at
// base (no later than any part's start). Each part is shifted by its start
// time's distance from base, rounded to a whole second; skew is the largest
// rounding, by which a part's seconds are misplaced.
func mergeSeries(parts []seriesPart, base time.Time) (out result.Series, skew time.Duration) {
	shift := make([]int, len(parts))
	n := 0
	for i, p := range parts {
		d := p.start.Sub(base)
		shift[i] = int(d.Round(time.Second) / time.Second)
		skew = max(skew, (d - time.Duration(shift[i])*time.Second).Abs())
		n = max(n, shift[i]+len(p.s.SentPerS))
	}
	out = result.Series{
		SentPerS: make([]int, n), CompletedPerS: make([]int, n), ErrorsPerS: make([]int, n),
		InFlight: make([]int, n), OutputTokens: make([]int64, n),
		TTFTp50ms: make([]float64, n), TTFTp99ms: make([]float64, n), TTFTMeanMS: make([]float64, n),
		E2Ep50ms: make([]float64, n), E2Ep99ms: make([]float64, n), E2EMeanMS: make([]float64, n),
	}
	ttftW := make([]float64, n)
	e2eW := make([]float64, n)
	var extra []extraColumns
	for _, p := range parts {
		if len(p.s.GoodPerS) > 0 {
			out.GoodPerS = make([]int, n)
			break
		}
	}
	for _, c := range extraLatencies {
		for _, p := range parts {
			if len(*c.mean(&p.s)) > 0 {
				for _, f := range []func(*result.Series) *[]float64{c.p50, c.p99, c.mean} {
					*f(&out) = make([]float64, n)
				}
				extra = append(extra, extraColumns{cols: c, w: make([]float64, n)})
				break
			}
		}
	}
	for i, p := range parts {
		s := p.s
		for k := range s.SentPerS {
			j := k + shift[i]
			out.SentPerS[j] += s.SentPerS[k]
			out.CompletedPerS[j] += at(s.CompletedPerS, k)
			out.ErrorsPerS[j] += at(s.ErrorsPerS, k)
			out.InFlight[j] += at(s.InFlight, k)
			out.OutputTokens[j] += at(s.OutputTokens, k)
			done := float64(at(s.CompletedPerS, k))
			ok := float64(at(s.CompletedPerS, k) - at(s.ErrorsPerS, k))
			if m := at(s.TTFTMeanMS, k); m > 0 && done > 0 {
				out.TTFTMeanMS[j] += m * done
				ttftW[j] += done
			}
			if m := at(s.E2EMeanMS, k); m > 0 && ok > 0 {
				out.E2EMeanMS[j] += m * ok
				e2eW[j] += ok
			}
			out.TTFTp50ms[j] = max(out.TTFTp50ms[j], at(s.TTFTp50ms, k))
			out.TTFTp99ms[j] = max(out.TTFTp99ms[j], at(s.TTFTp99ms, k))
			out.E2Ep50ms[j] = max(out.E2Ep50ms[j], at(s.E2Ep50ms, k))
			out.E2Ep99ms[j] = max(out.E2Ep99ms[j], at(s.E2Ep99ms, k))
			if out.GoodPerS != nil {
				out.GoodPerS[j] += at(s.GoodPerS, k)
			}
			for _, e := range extra {
				c := e.cols
				if m := at(*c.mean(&s), k); m > 0 && ok > 0 {
					(*c.mean(&out))[j] += m * ok
					e.w[j] += ok
				}
				(*c.p50(&out))[j] = max((*c.p50(&out))[j], at(*c.p50(&s), k))
				(*c.p99(&out))[j] = max((*c.p99(&out))[j], at(*c.p99(&s), k))
			}
		}
	}
	for j := range n {
		if ttftW[j] > 0 {
			out.TTFTMeanMS[j] /= ttftW[j]
		}
		if e2eW[j] > 0 {
			out.E2EMeanMS[j] /= e2eW[j]
		}
		for _, e := range extra {
			if e.w[j] > 0 {
				(*e.cols.mean(&out))[j] /= e.w[j]
			}
		}
	}
	return out, skew
}

// at is s[k], or 0 past the end of a series shorter than its siblings.
func at[T int | int64 | float64](s []T, k int) T {
	if k < len(s) {
		return s[k]
	}
	return 0
}

// latencyColumns point at the p50, p99 and mean columns of one latency of
// a series.
type latencyColumns struct {
	p50, p99, mean func(*result.Series) *[]float64
}

// extraLatencies are the per-second latencies of successes beyond TTFT and
// E2E (ITL, TPOT, the intended-time twins), merged as E2E is.
var extraLatencies = []latencyColumns{
	{func(s *result.Series) *[]float64 { return &s.ITLp50ms }, func(s *result.Series) *[]float64 { return &s.ITLp99ms }, func(s *result.Series) *[]float64 { return &s.ITLMeanMS }},
	{func(s *result.Series) *[]float64 { return &s.TPOTp50ms }, func(s *result.Series) *[]float64 { return &s.TPOTp99ms }, func(s *result.Series) *[]float64 { return &s.TPOTMeanMS }},
	{func(s *result.Series) *[]float64 { return &s.TTFTIntendedP50ms }, func(s *result.Series) *[]float64 { return &s.TTFTIntendedP99ms }, func(s *result.Series) *[]float64 { return &s.TTFTIntendedMeanMS }},
	{func(s *result.Series) *[]float64 { return &s.E2EIntendedP50ms }, func(s *result.Series) *[]float64 { return &s.E2EIntendedP99ms }, func(s *result.Series) *[]float64 { return &s.E2EIntendedMeanMS }},
}

// extraColumns is one extra latency being merged, with its mean's weights.
type extraColumns struct {
	cols latencyColumns
	w    []float64
}
