package metrics

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/result"
)

// window keeps the last few seconds of figures, for thresholds evaluated
// while a run goes on (abortOnFail). Each second has its own histograms
// (two significant figures) and counts; a view merges the seconds it spans.
type window struct {
	secs []winSec // ring, indexed by second modulo its length
}

type winSec struct {
	sec                  int // which second this slot holds (-1: none)
	ok, failed, good     int
	tasks                int
	outTokens, inTokens  int64
	ttft, tpot, e2e, itl *hdr.Histogram
}

func newWindow(seconds int) *window {
	w := &window{secs: make([]winSec, seconds+1)}
	for i := range w.secs {
		w.secs[i] = winSec{sec: -1,
			ttft: hdr.New(1, latencyMax, 2), tpot: hdr.New(1, latencyMax, 2),
			e2e: hdr.New(1, latencyMax, 2), itl: hdr.New(1, latencyMax, 2)}
	}
	return w
}

func (w *window) slot(sec int) *winSec {
	s := &w.secs[sec%len(w.secs)]
	if s.sec != sec {
		s.sec, s.ok, s.failed, s.good, s.tasks, s.outTokens, s.inTokens = sec, 0, 0, 0, 0, 0, 0
		s.ttft.Reset()
		s.tpot.Reset()
		s.e2e.Reset()
		s.itl.Reset()
	}
	return s
}

// us is d in whole microseconds, clamped into the histograms' range.
func us(d time.Duration) int64 {
	v := int64(d / time.Microsecond)
	return min(max(v, 0), latencyMax)
}

func (w *window) add(sec int, rec *record.Record, good bool) {
	s := w.slot(sec)
	if rec.Failed() {
		s.failed++
		return
	}
	s.ok++
	if good {
		s.good++
	}
	if TaskDone(rec) {
		s.tasks++
	}
	s.outTokens += int64(rec.OutputTokens)
	s.inTokens += int64(rec.InputTokens)
	if t, ok := rec.TTFT(); ok {
		s.ttft.RecordValue(us(t))
	}
	if t, ok := rec.TPOT(); ok {
		s.tpot.RecordValue(us(t))
	}
	s.e2e.RecordValue(us(rec.E2E()))
	for _, g := range rec.Gaps {
		s.itl.RecordValue(us(g))
	}
}

// view merges the seconds [now-n, now) into a scenario-shaped summary and
// histograms, so that Lookup can evaluate thresholds on it.
func (w *window) view(now, n int) (result.Scenario, map[string]string) {
	ttft, tpot, e2e, itl := hdr.New(1, latencyMax, 2), hdr.New(1, latencyMax, 2), hdr.New(1, latencyMax, 2), hdr.New(1, latencyMax, 2)
	var ok, failed, good, tasks int
	var out, in int64
	for sec := max(now-n, 0); sec < now; sec++ {
		s := &w.secs[sec%len(w.secs)]
		if s.sec != sec {
			continue
		}
		ok, failed, good, tasks, out, in = ok+s.ok, failed+s.failed, good+s.good, tasks+s.tasks, out+s.outTokens, in+s.inTokens
		ttft.Merge(s.ttft)
		tpot.Merge(s.tpot)
		e2e.Merge(s.e2e)
		itl.Merge(s.itl)
	}
	span := float64(min(n, now))
	sc := result.Scenario{
		Requests: result.Requests{Succeeded: ok, Failed: failed},
		Metrics:  map[string]result.Dist{},
	}
	if span > 0 {
		sc.Throughput = result.Throughput{RequestsPerS: float64(ok) / span, OutputTokensPerS: float64(out) / span,
			InputTokensPerS: float64(in) / span, TotalTokensPerS: float64(in+out) / span, STPS: float64(tasks) / span}
		sc.Goodput.RequestsPerS = float64(good) / span
	}
	if ok+failed > 0 {
		sc.Goodput.Fraction = float64(good) / float64(ok+failed)
	}
	hist := map[string]string{}
	for k, h := range map[string]*hdr.Histogram{TTFT: ttft, TPOT: tpot, E2E: e2e, ITL: itl} {
		if h.TotalCount() == 0 {
			continue
		}
		sc.Metrics[k] = Summarize(h, 1000)
		if b, err := h.Encode(hdr.V2CompressedEncodingCookieBase); err == nil {
			hist[k] = string(b)
		}
	}
	return sc, hist
}
