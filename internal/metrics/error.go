package metrics

import (
	"fmt"
	"math"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/result"
)

// The measurement error (docs/figures.md, "Measurement error"): what the
// load generator's own lateness in reading responses may have added to a
// stage's figures. A busy machine reads a response's bytes late; the
// client knows by how much at most (record.Record's FirstBound, EndBound,
// ReadLag) and which stamps may be off by over 1 ms (LateFirst, LateGaps).
// That does not change the load the server saw, so it does not make the
// stage invalid: every figure gets a range its true value lies in, and a
// verdict stands when it is the same at both ends of it.
//
// Two ways bound a figure, and the tighter is taken:
//   - by value: no sample is off by more than the bound B, so no
//     percentile, mean, minimum or maximum is either (each order statistic
//     of the true samples is within B of the measured one);
//   - by rank: only k of n samples may be off by over 1 ms, so the true
//     q-quantile lies between the measured (q − k/n)- and (q + k/n)-
//     quantiles (replacing k samples moves an order statistic by at most k
//     ranks).
//
// TTFT and E2E are spans that end at a stamp, and a late stamp is only
// ever late: for them each request's true span lies between its measured
// one and that minus its own bound, kept as an "early" histogram (the
// lowest each sample can be), whose figures are the ranges' lower ends.

// Early histograms' keys: each sample of a distribution moved to the
// lowest it can be (see TTFTEarly).
const (
	TTFTIntendedEarly = "ttft_intended_early_ms"
	E2EEarly          = "e2e_early_ms"
	E2EIntendedEarly  = "e2e_intended_early_ms"
)

// earlyOf names the early histogram of each distribution that has one.
var earlyOf = map[string]string{
	TTFT: TTFTEarly, TTFTIntended: TTFTIntendedEarly,
	E2E: E2EEarly, E2EIntended: E2EIntendedEarly,
}

// IsEarly says whether a histogram key is an early twin (kept for the
// measurement error, not a figure of its own).
func IsEarly(key string) bool {
	for _, e := range earlyOf {
		if e == key {
			return true
		}
	}
	return false
}

// errorAgg accumulates a stage's measurement error from its successful
// requests whose read lag was measured.
type errorAgg struct {
	early map[string]*Hist // TTFTIntendedEarly, E2EEarly, E2EIntendedEarly
	// ttftIntEarly, e2eEarly and e2eIntEarly are early's, for add (no map
	// lookup per request).
	ttftIntEarly, e2eEarly, e2eIntEarly *Hist
	// late counts and bounds, by distribution key
	late  map[string]int64
	bound map[string]time.Duration
	// good counts the successes that met the SLO at the lowest (goodHi)
	// and highest (goodLo) their latencies can be, from the send and the
	// intended time.
	goodLo, goodHi, goodIntLo, goodIntHi int
}

func newErrorAgg() errorAgg {
	a := errorAgg{early: map[string]*Hist{}, late: map[string]int64{}, bound: map[string]time.Duration{}}
	for _, k := range []string{TTFTIntendedEarly, E2EEarly, E2EIntendedEarly} {
		a.early[k] = newLatencyHist()
	}
	a.ttftIntEarly, a.e2eEarly, a.e2eIntEarly = a.early[TTFTIntendedEarly], a.early[E2EEarly], a.early[E2EIntendedEarly]
	return a
}

func (a *errorAgg) lateBy(key string, d time.Duration) {
	a.late[key]++
	a.bound[key] = max(a.bound[key], d)
}

// latencies are the figures a request's SLO verdict reads.
type latencies struct {
	ttft, tpot, maxGap, e2e time.Duration
	hasTTFT, hasTPOT        bool
}

// met says whether l meets slo; lag is added to TTFT and E2E when judged
// from the intended time.
func (l latencies) met(slo SLO, lag time.Duration) bool {
	return (slo.TTFT == 0 || (l.hasTTFT && l.ttft+lag <= slo.TTFT)) &&
		(slo.TPOT == 0 || !l.hasTPOT || l.tpot <= slo.TPOT) &&
		(slo.ITL == 0 || l.maxGap <= slo.ITL) &&
		(slo.E2E == 0 || l.e2e+lag <= slo.E2E)
}

// add takes a successful request into the aggregate: m are its measured
// latencies, lag its schedule lag; early says whether to record its lowest
// latencies in the early histograms (not while they are their twins: see
// Recorder.splitEarly).
func (a *errorAgg) add(rec *record.Record, m latencies, lag time.Duration, slo SLO, early bool) {
	low, high := m, m // the lowest and highest each latency can be
	if rec.ReadLag > 0 {
		if m.hasTTFT && rec.LateFirst && rec.FirstBound > 0 {
			low.ttft = max(m.ttft-rec.FirstBound, 0)
			a.lateBy(TTFT, rec.FirstBound)
			a.lateBy(TTFTIntended, rec.FirstBound)
		}
		if rec.EndBound > 0 {
			low.e2e = max(m.e2e-rec.EndBound, 0)
			a.lateBy(E2E, rec.EndBound)
			a.lateBy(E2EIntended, rec.EndBound)
		}
		if m.hasTPOT && (low.ttft != m.ttft || low.e2e != m.e2e) {
			n := time.Duration(rec.OutputTokens - 1)
			low.tpot = max(low.e2e-m.ttft, 0) / n
			high.tpot = (m.e2e - low.ttft) / n
			a.lateBy(TPOT, max(m.tpot-low.tpot, high.tpot-m.tpot))
		}
		if rec.LateGaps > 0 {
			a.late[ITL] += int64(rec.LateGaps)
			a.bound[ITL] = max(a.bound[ITL], rec.ReadLag)
			low.maxGap, high.maxGap = max(m.maxGap-rec.ReadLag, 0), m.maxGap+rec.ReadLag
		}
	}
	// Every success, late or not, so that an early histogram has the
	// samples of its distribution, one each (its figures are the ranges'
	// lower ends, percentile for percentile).
	if early {
		if m.hasTTFT {
			a.ttftIntEarly.recordDuration(low.ttft + lag)
		}
		a.e2eEarly.recordDuration(low.e2e)
		a.e2eIntEarly.recordDuration(low.e2e + lag)
	}
	if low.met(slo, 0) {
		a.goodHi++
	}
	if high.met(slo, 0) {
		a.goodLo++
	}
	if low.met(slo, 0) && low.met(slo, lag) {
		a.goodIntHi++
	}
	if high.met(slo, 0) && high.met(slo, lag) {
		a.goodIntLo++
	}
}

// result is the stage's measurement error, nil when nothing may be off by
// over 1 ms; done counts the requests goodput is a fraction of, hists are
// the stage's encoded histograms (with the early twins) for the ranges of
// the printed figures.
func (a *errorAgg) result(done int, sc *result.Scenario, hists map[string]string) *result.MeasurementError {
	me := &result.MeasurementError{Figures: map[string]result.FigureError{}}
	for k, n := range a.late {
		if n == 0 {
			continue
		}
		me.Figures[k] = result.FigureError{Late: n, Count: sc.Metrics[k].Count, BoundMS: ms64(a.bound[k]), HighOnly: earlyOf[k] != ""}
	}
	if done > 0 {
		f := float64(done)
		me.Goodput = result.Range{Low: float64(a.goodLo) / f, High: float64(a.goodHi) / f}
		me.GoodputIntended = result.Range{Low: float64(a.goodIntLo) / f, High: float64(a.goodIntHi) / f}
	}
	if len(me.Figures) == 0 && me.Goodput.Low == me.Goodput.High && me.GoodputIntended.Low == me.GoodputIntended.High {
		return nil
	}
	sc.MeasurementError = me // Bounds reads it
	FillErrorRanges(me, sc, hists)
	return me
}

// window is the measurement error of a window of the stage (sc, a view
// of its last seconds) from the stage's so far, for triggers judged
// during the run: the window's samples are some of the stage's, so no
// more of them are late than the stage's late samples, none by more than
// the stage's bound, and no more of its requests can have their SLO
// verdict turned than the stage's (a window has no goodput from the
// intended time). Bounds ranges a window's figures with it, as a
// stage's. nil when nothing may be off by over 1 ms.
func (a *errorAgg) window(sc *result.Scenario) *result.MeasurementError {
	me := &result.MeasurementError{Figures: map[string]result.FigureError{}}
	for k, n := range a.late {
		count := sc.Metrics[k].Count
		if n == 0 || count == 0 {
			continue
		}
		me.Figures[k] = result.FigureError{Late: min(n, count), Count: count, BoundMS: ms64(a.bound[k]), HighOnly: earlyOf[k] != ""}
	}
	done := sc.Requests.Succeeded + sc.Requests.Failed
	turned := func(lo, hi int) float64 { return float64(min(hi-lo, done)) / float64(max(done, 1)) }
	if t := turned(a.goodLo, a.goodHi); t > 0 && done > 0 {
		f := sc.Goodput.Fraction
		me.Goodput = result.Range{Low: max(f-t, 0), High: min(f+t, 1)}
	}
	if len(me.Figures) == 0 && me.Goodput.Low == me.Goodput.High && me.GoodputIntended.Low == me.GoodputIntended.High {
		return nil
	}
	return me
}

// FillErrorRanges sets the P50 and P99 ranges of each of me's figures from
// the scenario's histograms (the recorder's, or merged shards').
func FillErrorRanges(me *result.MeasurementError, sc *result.Scenario, hists map[string]string) {
	for k, fe := range me.Figures {
		name := strings.TrimSuffix(k, "_ms")
		for _, p := range []struct {
			pct float64
			r   *result.Range
		}{{50, &fe.P50}, {99, &fe.P99}} {
			if lo, hi, ok := Bounds(sc, hists, "percentile", p.pct, name); ok {
				*p.r = result.Range{Low: lo, High: hi}
			} else if v, ok := Lookup(sc, hists, "percentile", p.pct, name); ok {
				*p.r = result.Range{Low: v, High: v}
			}
		}
		me.Figures[k] = fe
	}
}

func ms64(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Bounds returns the range [lo, hi] a figure's true value lies in given
// sc's measurement error (asked as Lookup is); ok is false when the figure
// is exact (to 1 ms) or has no value.
func Bounds(sc *result.Scenario, hist map[string]string, agg string, percentile float64, metric string) (lo, hi float64, ok bool) {
	if agg == "" && metric == "ice" {
		return iceBounds(sc.ICE)
	}
	me := sc.MeasurementError
	if me == nil {
		return 0, 0, false
	}
	base, bucket, inBucket := strings.Cut(metric, "@input:")
	if agg == "" {
		if inBucket {
			return 0, 0, false
		}
		return scalarBounds(sc, base)
	}
	key := distKey(base)
	// Counts are exact: tokens per chunk has no error, nor has count().
	fe, has := me.Figures[key]
	if !has || fe.Late == 0 || agg == "count" {
		return 0, 0, false
	}
	v, ok := Lookup(sc, hist, agg, percentile, metric)
	if !ok || math.IsNaN(v) {
		return 0, 0, false
	}
	b := fe.BoundMS
	lo, hi = v-b, v+b // by value
	if fe.HighOnly {
		hi = v
	}
	if agg == "stddev" {
		// The true samples are the measured ones moved by at most b, k
		// of n of them: the standard deviation (a norm of the centred
		// samples over √n) moves by at most b·√(k/n).
		d := b * math.Sqrt(float64(fe.Late)/float64(max(fe.Count, 1)))
		return max(v-d, 0), v + d, true
	}
	if inBucket {
		// A bucket's own late count is not kept: by value only.
		_ = bucket
		return max(lo, 0), hi, true
	}
	if e, has := earlyOf[key]; has && hist[e] != "" {
		if w, ok := Lookup(sc, map[string]string{key: hist[e]}, agg, percentile, base); ok && !math.IsNaN(w) {
			lo = max(lo, w)
		}
		return max(lo, 0), hi, true
	}
	h := decoded(hist, key)
	if h == nil {
		return max(lo, 0), hi, true
	}
	f := 100 * float64(fe.Late) / float64(max(h.TotalCount(), 1)) // in percentiles
	at := func(p float64) float64 { return float64(h.ValueAtPercentile(p)) / 1000 }
	switch agg {
	case "percentile":
		lo = max(lo, at(max(percentile-f, 0)))
		if percentile+f <= 100 && !fe.HighOnly {
			hi = min(hi, at(percentile+f))
		}
	case "max":
		lo = max(lo, at(max(100-f, 0)))
	case "min":
		if f <= 100 && !fe.HighOnly {
			hi = min(hi, at(f))
		}
	case "mean":
		// k of n samples off by at most b: the mean by at most b·k/n.
		d := b * f / 100
		lo, hi = max(lo, v-d), min(hi, v+d)
		if fe.HighOnly {
			hi = v
		}
	}
	return max(lo, 0), hi, true
}

// iceBounds bounds ICE (the mean over conversations of the standard
// deviation of a conversation's turn entropies): each turn's entropy is
// estimated from the top logprobs, up to ErrorBound nats under the true
// one, and moving each of n values by an amount in [0, b] moves their
// sample standard deviation by at most b·√(n/(4(n−1))) ≤ b/√2, so each
// conversation's ICE, and their mean, by at most b/√2.
func iceBounds(ice *result.ICE) (lo, hi float64, ok bool) {
	if ice == nil || ice.Conversations == 0 || ice.ErrorBound <= 0 {
		return 0, 0, false
	}
	d := ice.ErrorBound / math.Sqrt2
	return max(ice.Mean-d, 0), ice.Mean + d, true
}

// scalarBounds bounds the scalar figures late stamps can move: goodput.
func scalarBounds(sc *result.Scenario, metric string) (lo, hi float64, ok bool) {
	me := sc.MeasurementError
	var r result.Range
	var frac, rps float64
	switch metric {
	case "goodput", "goodput_sent", "goodput_rps", "goodput_sent_rps":
		r, frac, rps = me.Goodput, sc.Goodput.Fraction, sc.Goodput.RequestsPerS
	case "goodput_intended", "goodput_intended_rps":
		r, frac, rps = me.GoodputIntended, sc.Goodput.IntendedFraction, sc.Goodput.IntendedRequestsPerS
	default:
		return 0, 0, false
	}
	if r.Low == r.High {
		return 0, 0, false
	}
	if !strings.HasSuffix(metric, "_rps") {
		return r.Low, r.High, true
	}
	if frac <= 0 {
		return 0, math.Inf(1), true // no good request measured: the rate's scale is unknown
	}
	return rps * r.Low / frac, rps * r.High / frac, true
}

// decoded is the histogram of key in hist, nil when absent or unreadable.
func decoded(hist map[string]string, key string) *hdr.Histogram {
	enc, ok := hist[key]
	if !ok {
		return nil
	}
	h, err := Decode(enc)
	if err != nil {
		return nil
	}
	return h
}

// Source adapts a scenario and its encoded histograms to the threshold
// package's Source (Lookup) and its measurement-error ranges (Bounds).
type Source struct {
	Scenario *result.Scenario
	Hists    map[string]string
}

// Lookup returns a figure (see the package's Lookup).
func (s Source) Lookup(agg string, percentile float64, metric string) (float64, bool) {
	return Lookup(s.Scenario, s.Hists, agg, percentile, metric)
}

// Bounds returns the range a figure's true value lies in (see the
// package's Bounds).
func (s Source) Bounds(agg string, percentile float64, metric string) (lo, hi float64, ok bool) {
	return Bounds(s.Scenario, s.Hists, agg, percentile, metric)
}

// Doubt says why a figure cannot be judged although it has a value, ""
// when it can: it rests on usage the stage does not trust (see
// UsageDoubt).
func (s Source) Doubt(agg string, _ float64, metric string) string {
	return UsageDoubt(s.Scenario, agg, metric)
}

// ErrorRows are the figures ErrorText shows, in order, with their names.
var ErrorRows = []struct{ Key, Name string }{
	{TTFT, "TTFT"}, {TTFTIntended, "TTFT (intended)"}, {ITL, "ITL"},
	{TPOT, "TPOT"}, {E2E, "E2E"}, {E2EIntended, "E2E (intended)"},
}

// ErrorText says in words what a stage's measurement error is: the range
// of each p99 (and goodput) that responses read late may have moved; ""
// when there is none.
func ErrorText(me *result.MeasurementError) string {
	if me == nil {
		return ""
	}
	var parts []string
	for _, row := range ErrorRows {
		fe, ok := me.Figures[row.Key]
		if !ok || fe.P99.High <= fe.P99.Low {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s p99 in [%.4g, %.4g] ms (%d of %d read late, by up to %.1f ms)", row.Name, fe.P99.Low, fe.P99.High, fe.Late, fe.Count, fe.BoundMS))
	}
	for _, g := range []struct {
		name string
		r    result.Range
	}{{"goodput", me.Goodput}, {"goodput (intended)", me.GoodputIntended}} {
		if g.r.High > g.r.Low {
			parts = append(parts, fmt.Sprintf("%s in [%.1f %%, %.1f %%]", g.name, 100*g.r.Low, 100*g.r.High))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "responses read late (a busy machine), so the true " + strings.Join(parts, ", ")
}
