package metrics

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spate-dev/spate/result"
)

// secColumn is one latency of the per-second series: a histogram of the
// current second and the three columns (p50, p99, mean) it is flushed to.
type secColumn struct {
	h              *hdr.Histogram
	p50, p99, mean func(s *result.Series) *[]float64
}

// secColumns are the per-second latency columns beyond TTFT and E2E
// (which the Recorder keeps as it always has): ITL, TPOT and the
// intended-time twins. compare windows them (docs/compare.md).
type secColumns struct {
	itl, tpot, ttftIntended, e2eIntended secColumn
}

func newSecColumn(p50, p99, mean func(s *result.Series) *[]float64) secColumn {
	return secColumn{h: hdr.New(1, latencyMax, 2), p50: p50, p99: p99, mean: mean}
}

func newSecColumns() *secColumns {
	return &secColumns{
		itl: newSecColumn(func(s *result.Series) *[]float64 { return &s.ITLp50ms },
			func(s *result.Series) *[]float64 { return &s.ITLp99ms }, func(s *result.Series) *[]float64 { return &s.ITLMeanMS }),
		tpot: newSecColumn(func(s *result.Series) *[]float64 { return &s.TPOTp50ms },
			func(s *result.Series) *[]float64 { return &s.TPOTp99ms }, func(s *result.Series) *[]float64 { return &s.TPOTMeanMS }),
		ttftIntended: newSecColumn(func(s *result.Series) *[]float64 { return &s.TTFTIntendedP50ms },
			func(s *result.Series) *[]float64 { return &s.TTFTIntendedP99ms }, func(s *result.Series) *[]float64 { return &s.TTFTIntendedMeanMS }),
		e2eIntended: newSecColumn(func(s *result.Series) *[]float64 { return &s.E2EIntendedP50ms },
			func(s *result.Series) *[]float64 { return &s.E2EIntendedP99ms }, func(s *result.Series) *[]float64 { return &s.E2EIntendedMeanMS }),
	}
}

func (c *secColumns) all() [4]*secColumn {
	return [4]*secColumn{&c.itl, &c.tpot, &c.ttftIntended, &c.e2eIntended}
}

// grow appends a zero second to every column, and to GoodPerS.
func (c *secColumns) grow(s *result.Series) {
	s.GoodPerS = append(s.GoodPerS, 0)
	for _, col := range c.all() {
		for _, f := range []func(*result.Series) *[]float64{col.p50, col.p99, col.mean} {
			p := f(s)
			*p = append(*p, 0)
		}
	}
}

// flush writes second sec's figures of every column that has values and
// resets the histograms.
func (c *secColumns) flush(s *result.Series, sec int) {
	for _, col := range c.all() {
		if col.h.TotalCount() > 0 && sec < len(*col.p50(s)) {
			(*col.p50(s))[sec] = float64(col.h.ValueAtPercentile(50)) / 1000
			(*col.p99(s))[sec] = float64(col.h.ValueAtPercentile(99)) / 1000
			(*col.mean(s))[sec] = col.h.Mean() / 1000
		}
		col.h.Reset()
	}
}

// record adds one duration to a column of the current second.
func (col *secColumn) record(d time.Duration) {
	_ = col.h.RecordValue(max(int64(d/time.Microsecond), 1))
}
