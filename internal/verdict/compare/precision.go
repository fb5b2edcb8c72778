package compare

import (
	"fmt"
	"math"
	"slices"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/result"
)

// Measurement error (docs/compare.md, "Measurement error"). A result's
// stages carry how far the load generator's own lateness may have moved
// each latency and the goodput (result.MeasurementError): each figure's
// true value lies in a range around the measured one. A gated row is
// decided again at both ends of those ranges: at the end least
// favourable to a regression (the new side's figures at their best, the
// base's at their worst) and at the end most favourable (the new side's at
// their worst, the base's at their best). The verdict stands when the gate
// says the same at both; otherwise the row cannot be judged.
//
// Windowed rows move every window of a run by how far late samples can
// have moved the mean of that run's windows, the tighter of two bounds
// (as metrics.Bounds bounds a figure): no sample is off by more than the
// stage's BoundMS, so no window's value is either; and only Late samples
// are off by over 1 ms, each in one second, so at most Late seconds move,
// and the mean of the windows moves by at most BoundMS times the largest
// total share Late seconds can have in it. Goodput's windows move by at
// most the requests whose SLO verdict late stamps could turn, placed
// where they weigh most. Whole-stage figures (repeated runs) take the
// stage's ranges: the P50 and P99 worked out from its histograms, the
// mean's by value and rank, the goodput's range. A side without
// measurement error (an older result) is exact.

// sideKind says which side of a comparison a run is on.
type sideKind int

const (
	sideBase sideKind = iota
	sideNew
	sideRef // a reference run: its figures are taken as measured
)

// end is one end of the sides' measurement error a row is judged at.
type end struct {
	// toward is the end most favourable to a regression: the new side's
	// figures at their worst and the base's at their best. Otherwise the
	// least favourable: new at its best, base at its worst.
	toward bool
}

// high says whether a side's figures are moved to the high end of their
// ranges at e.
func (e *end) high(m Metric, side sideKind) bool {
	worseIsHigh := !m.HigherIsBetter
	takesWorse := (side == sideNew) == e.toward
	return takesWorse == worseIsHigh
}

// offset is how far e moves a side's figure whose true value lies in
// [v+lo, v+hi].
func (e *end) offset(m Metric, side sideKind, lo, hi float64) float64 {
	if e == nil || side == sideRef {
		return 0
	}
	if e.high(m, side) {
		return hi
	}
	return lo
}

// clampTo keeps a moved figure in its metric's domain: a latency is not
// negative, a fraction lies in [0, 1].
func clampTo(m Metric, v float64) float64 {
	switch {
	case m.Unit == "":
		return min(max(v, 0), 1)
	case m.dist != "":
		return max(v, 0)
	}
	return v
}

// share is a part of the mean of a run's windows that late samples can
// move: each of up to n units moves the mean by w (times the bound).
type share struct {
	w float64
	n float64
}

// mostMoved is the most that k units can move a mean made of shares:
// the k that weigh most.
func mostMoved(shares []share, k float64) float64 {
	slices.SortFunc(shares, func(a, b share) int {
		switch {
		case a.w > b.w:
			return -1
		case a.w < b.w:
			return 1
		}
		return 0
	})
	moved := 0.0
	for _, s := range shares {
		if k <= 0 {
			break
		}
		take := min(k, s.n)
		moved += take * s.w
		k -= take
	}
	return moved
}

// windowOffsets is the range [lo, hi] (lo ≤ 0 ≤ hi) by which the true
// mean of a run's windows of m may differ from the measured one, from its
// stage's measurement error; both 0 when the figure is exact.
func windowOffsets(sc *result.Scenario, sp Span, m Metric) (lo, hi float64) {
	me := sc.MeasurementError
	if me == nil {
		return 0, 0
	}
	vals, starts, _ := windowSpans(&sc.Series, sp, m)
	if len(vals) == 0 {
		return 0, 0
	}
	j := float64(len(vals))
	switch {
	case m.dist != "" && m.weights != nil:
		fe, ok := me.Figures[m.dist]
		if !ok || fe.Late <= 0 || fe.BoundMS <= 0 {
			return 0, 0
		}
		var shares []share
		for _, a := range starts {
			ws := m.weights(&sc.Series, a, a+sp.Window)
			var total float64
			for _, w := range ws {
				total += w
			}
			for _, w := range ws {
				if w > 0 {
					shares = append(shares, share{w: w / total / j, n: 1})
				}
			}
		}
		d := fe.BoundMS * min(1, mostMoved(shares, float64(fe.Late)))
		if fe.HighOnly {
			return -d, 0
		}
		return -d, d
	case m.Name == "goodput":
		g := me.Goodput
		if g.Low >= g.High {
			return 0, 0
		}
		done := 0
		for _, n := range sc.Series.CompletedPerS {
			done += n
		}
		f := sc.Goodput.Fraction
		// Requests whose verdict late stamps could turn, each way.
		down := math.Ceil(max(f-g.Low, 0)*float64(done) - 1e-9)
		up := math.Ceil(max(g.High-f, 0)*float64(done) - 1e-9)
		var shares []share
		for _, a := range starts {
			n := 0
			for i := a; i < a+sp.Window; i++ {
				n += at(sc.Series.CompletedPerS, i)
			}
			shares = append(shares, share{w: 1 / float64(n) / j, n: float64(n)})
		}
		return -min(mostMoved(shares, down), 1), min(mostMoved(shares, up), 1)
	}
	return 0, 0
}

// runOffsets is the range [lo, hi] (lo ≤ 0 ≤ hi) by which the true
// whole-stage figure of m may differ from the measured one (m.run); both
// 0 when it is exact.
func runOffsets(sc *result.Scenario, m Metric) (lo, hi float64) {
	me := sc.MeasurementError
	if me == nil {
		return 0, 0
	}
	if m.Name == "goodput" {
		g := me.Goodput
		if g.Low >= g.High {
			return 0, 0 // exact (as metrics.Bounds reads it)
		}
		return min(g.Low-sc.Goodput.Fraction, 0), max(g.High-sc.Goodput.Fraction, 0)
	}
	fe, ok := me.Figures[m.dist]
	if m.dist == "" || !ok || fe.Late <= 0 || fe.BoundMS <= 0 {
		return 0, 0
	}
	byValue := func(d float64) (float64, float64) {
		if fe.HighOnly {
			return -d, 0
		}
		return -d, d
	}
	d := sc.Metrics[m.dist]
	var v float64
	var r result.Range
	switch m.stat {
	case "p50":
		v, r = d.P50, fe.P50
	case "p99":
		v, r = d.P99, fe.P99
	default: // the mean: Late of Count samples off by at most BoundMS
		return byValue(fe.BoundMS * min(1, float64(fe.Late)/float64(max(fe.Count, 1))))
	}
	if r.Low == 0 && r.High == 0 {
		return byValue(fe.BoundMS) // no range worked out: by value
	}
	return min(r.Low-v, 0), max(r.High-v, 0)
}

// imprecise says whether any run of either side has a measurement error
// that moves m in stage.
func imprecise(s Sides, stage string, m Metric, cfg Config) bool {
	for _, in := range slices.Concat(s.Base, s.New) {
		sc := scenario(in.Result, stage)
		if sc == nil || sc.MeasurementError == nil {
			continue
		}
		if lo, hi := runOffsets(sc, m); lo != 0 || hi != 0 {
			return true
		}
		if lo, hi := windowOffsets(sc, span(in.Result, sc, cfg), m); lo != 0 || hi != 0 {
			return true
		}
	}
	return false
}

// usageDoubt says why m cannot be judged in stage because it rests on
// the output token counts of a run whose server's usage was not trusted
// (TPOT, output_tps, and goodput when its SLO bounds TPOT), "" when it
// can. A reference run counts too: new is scaled by it.
func usageDoubt(s Sides, stage string, m Metric) string {
	agg, name := "", m.Name
	switch {
	case m.dist == "tpot_ms":
		agg, name = "percentile", "tpot"
	case m.Name == "output_tps", m.Name == "goodput":
	default:
		return ""
	}
	for i, in := range slices.Concat(s.Base, s.New, s.BaseRef, s.NewRef) {
		sc := scenario(in.Result, stage)
		if i >= len(s.Base)+len(s.New) {
			sc = refScenario(in.Result, stage)
		}
		if sc == nil {
			continue
		}
		if why := metrics.UsageDoubt(sc, agg, name); why != "" {
			return fmt.Sprintf("%s: %s cannot be judged: %s", in.Path, m.Name, why)
		}
	}
	return ""
}

// Ends is a gated row decided again at both ends of the sides'
// measurement error (docs/compare.md, "Measurement error").
type Ends struct {
	// Least is the row with each side's figure moved to the end of its
	// range least favourable to a regression (new at its best, base at
	// its worst), Most to the end most favourable (new at its worst, base
	// at its best).
	Least End `json:"least"`
	Most  End `json:"most"`
	// Note says how imprecise the measurement was when both ends agree.
	Note string `json:"note,omitempty"`
}

// End is a row's figures and verdict at one end of the measurement error.
type End struct {
	// Base and New are the sides' figures moved to this end (as Row's
	// Base.Center and New.Center), Change the change between them and P
	// its p-value.
	Base   float64 `json:"base"`
	New    float64 `json:"new"`
	Change float64 `json:"change"`
	P      float64 `json:"p"`
	// PHolm is the adjusted p-value over the gated rows, each at this end.
	PHolm *float64 `json:"p_holm,omitempty"`
	// Verdict is the row's verdict at this end, after the correction.
	Verdict string `json:"verdict"`
}

func endOf(r *Row) End {
	return End{Base: r.Base.Center, New: r.New.Center, Change: r.Change, P: r.P, PHolm: r.PHolm, Verdict: r.Verdict}
}

// gateOutcome is what the gate makes of a verdict: a regression, none,
// or no verdict.
func gateOutcome(v string) string {
	switch v {
	case Regressed, Unknown:
		return v
	}
	return "not regressed"
}

// judgeEnds decides a gated row from its verdicts at the two ends of the
// measurement error (least and most, each judged in its own Holm family):
// the same gate outcome at both stands, with a note of how imprecise the
// measurement was; different ones cannot be judged, saying why. n is
// the number of gated rows.
func judgeEnds(r, least, most *Row, alpha float64, n int) {
	m, _ := MetricByName(r.Metric)
	e := &Ends{Least: endOf(least), Most: endOf(most)}
	r.MeasurementError = e
	if r.Verdict == Unknown {
		return // no verdict at the measured values either: its warnings say why
	}
	best, worst := "lowest", "highest"
	if m.HigherIsBetter {
		best, worst = worst, best
	}
	side := func(name string, v, measured float64, pos string) string {
		if v == measured {
			pos = "as measured"
		} else {
			pos = "at its " + pos
		}
		return fmt.Sprintf("%s %s %s", name, value(Value{Center: v}, r.Unit), pos)
	}
	at := func(x *Row, newAt, baseAt string) string {
		return fmt.Sprintf("%s (%s, %s: %s)", pctUnit(x.Change, x.Absolute, x.Unit),
			side("new", x.New.Center, r.New.Center, newAt), side("base", x.Base.Center, r.Base.Center, baseAt), x.Verdict)
	}
	ends := at(least, best, worst) + " at the end least favourable to a regression and " + at(most, worst, best) + " at the most favourable"
	if g := gateOutcome(least.Verdict); g == gateOutcome(most.Verdict) {
		v := least.Verdict
		if most.Verdict != v {
			v = Same // improved at one end only: no change that stands
		}
		if g == Unknown {
			r.Verdict = Unknown
			r.Warnings = append(r.Warnings, "no verdict at either end of the measurement error: "+ends)
			return
		}
		r.Verdict = v
		if least.Change != most.Change {
			e.Note = fmt.Sprintf("measured imprecisely (responses read late, a busy machine): the change is %s: %s at both ends, so the verdict stands", ends, g)
		}
		return
	}
	r.Verdict = Unknown
	r.Warnings = append(r.Warnings, fmt.Sprintf("responses read late (a busy machine) leave the change anywhere from %s; the gate (a regression beyond ±%s, significant at α=%g over the %d gated rows) says %s at one and %s at the other: cannot judge; lower the load on the generator's machine or shard the load",
		ends, marginText(r.Margin, r.Absolute, r.Unit), alpha, n, gateOutcome(least.Verdict), gateOutcome(most.Verdict)))
}
