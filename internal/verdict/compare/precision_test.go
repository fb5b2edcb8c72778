package compare

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/spate-dev/spate/result"
)

// lateBy gives r's stage a measurement error on one distribution: late of
// its samples may be off by up to bound ms (only ever high when highOnly,
// as TTFT and E2E), with p50 and p99 ranges by value.
func lateBy(r *result.Result, dist string, late int64, bound float64, highOnly bool) *result.Result {
	sc := &r.Scenarios[0]
	if sc.MeasurementError == nil {
		sc.MeasurementError = &result.MeasurementError{Figures: map[string]result.FigureError{}}
	}
	d := sc.Metrics[dist]
	rng := func(v float64) result.Range {
		hi := v + bound
		if highOnly {
			hi = v
		}
		return result.Range{Low: max(v-bound, 0), High: hi}
	}
	sc.MeasurementError.Figures[dist] = result.FigureError{Late: late, Count: d.Count, BoundMS: bound, HighOnly: highOnly, P50: rng(d.P50), P99: rng(d.P99)}
	return r
}

// scaleE2Ep99 multiplies r's E2E p99 (per second and whole-stage) by f:
// a regression of that figure alone.
func scaleE2Ep99(r *result.Result, f float64) *result.Result {
	sc := &r.Scenarios[0]
	for i := range sc.Series.E2Ep99ms {
		sc.Series.E2Ep99ms[i] *= f
	}
	d := sc.Metrics["e2e_ms"]
	d.P99 *= f
	sc.Metrics["e2e_ms"] = d
	return r
}

// all is every sample of a stage of baseModel (an upper bound of Late).
const all = 1 << 20

// TestMeasurementErrorBothEnds: a gated row is decided at both ends of the
// sides' measurement error (the new side at its best and the base at its
// worst, and the reverse); when both agree the verdict stands, with a note
// of how imprecise the measurement was, and when they disagree the row is
// "?" and the comparison inconclusive (exit 4), naming the figure, the
// change at both ends and the gate. A side without measurement_error is
// exact.
func TestMeasurementErrorBothEnds(t *testing.T) {
	m := baseModel
	for _, c := range []struct {
		name   string
		b, n   *result.Result
		metric string // the row looked at
		want   string // its verdict
		// regressed: the report's gated regressions; inconclusive: words
		// the reason must hold ("" for none); note: words the row's note
		// must hold ("" for no note).
		regressed    []string
		inconclusive []string
		note         []string
	}{
		{
			// (1) +30 % on E2E p99, every sample of both sides up to
			// 20 ms late: a regression at both ends.
			name: "regression beyond the error", metric: "e2e_p99_ms", want: Regressed,
			b:         lateBy(m.result(1, "v1"), "e2e_ms", all, 20, true),
			n:         lateBy(scaleE2Ep99(m.result(2, "v2"), 1.3), "e2e_ms", all, 20, true),
			regressed: []string{"main/e2e_p99_ms"},
			note:      []string{"measured imprecisely", "at the end least favourable to a regression and +", "regressed at both ends, so the verdict stands"},
		},
		{
			// (2) +8 % on E2E p99, the new side's every sample up to
			// 100 ms late (the base exact): regressed as measured, but
			// within the margin with the new side at its lowest.
			name: "regression only at the measured values", metric: "e2e_p99_ms", want: Unknown,
			b:            m.result(1, "v1"),
			n:            lateBy(scaleE2Ep99(m.result(2, "v2"), 1.08), "e2e_ms", all, 100, true),
			regressed:    []string{},
			inconclusive: []string{"no verdict on gated main/e2e_p99_ms", "responses read late", "new 1630.1 ms at its lowest, base 1612.1 ms as measured: ~) at the end least favourable", ": regressed) at the most favourable", "beyond ±5 %", "cannot judge"},
		},
		{
			// (4) no change, every sample of both sides up to 15 ms late
			// on E2E (under 2 % of its p50): both ends say no regression.
			name: "no change, error within the margin", metric: "e2e_p50_ms", want: Same,
			b:         lateBy(m.result(1, "v1"), "e2e_ms", all, 15, true),
			n:         lateBy(m.result(2, "v1"), "e2e_ms", all, 15, true),
			regressed: []string{},
			note:      []string{"measured imprecisely", "not regressed at both ends"},
		},
		{
			// (4) no change, a stall of 400 ms that made 2 samples of
			// each side late: 2 seconds of the windows move, so the mean
			// of the windows by 2/119 of 400 ms at most; still no change.
			name: "no change, a long stall of few samples", metric: "e2e_p50_ms", want: Same,
			b:         lateBy(m.result(1, "v1"), "e2e_ms", 2, 400, true),
			n:         lateBy(m.result(2, "v1"), "e2e_ms", 2, 400, true),
			regressed: []string{},
			note:      []string{"not regressed at both ends"},
		},
		{
			// What the rule gives for no change when the error is beyond
			// the margin: with the base at its lowest E2E p50 (every
			// sample 100 ms early, 12 % of it) the new side is slower
			// beyond the margin: the ends disagree, cannot judge.
			name: "no change, error beyond the margin", metric: "e2e_p50_ms", want: Unknown,
			b:            lateBy(m.result(1, "v1"), "e2e_ms", all, 100, true),
			n:            lateBy(m.result(2, "v1"), "e2e_ms", all, 100, true),
			regressed:    []string{},
			inconclusive: []string{"main/e2e_p50_ms", "cannot judge"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Compare(Sides{Base: []Input{{"b.json", c.b}}, New: []Input{{"n.json", c.n}}}, Config{Resamples: 1000})
			if err != nil {
				t.Fatal(err)
			}
			r := row(t, rep, "main", c.metric)
			if r.Verdict != c.want {
				t.Errorf("%s: %s, want %s: %v", c.metric, r.Verdict, c.want, r.Warnings)
			}
			if !slices.Equal(rep.Regressed, c.regressed) {
				t.Errorf("regressed %v, want %v", rep.Regressed, c.regressed)
			}
			for _, w := range c.inconclusive {
				if !strings.Contains(rep.Inconclusive, w) {
					t.Errorf("inconclusive %q, want it to hold %q", rep.Inconclusive, w)
				}
			}
			if len(c.inconclusive) == 0 && rep.Inconclusive != "" {
				t.Errorf("inconclusive %q, want none", rep.Inconclusive)
			}
			if r.MeasurementError == nil {
				t.Fatalf("%s was not judged at the ends of the measurement error", c.metric)
			}
			for _, w := range c.note {
				if !strings.Contains(r.MeasurementError.Note, w) {
					t.Errorf("note %q, want it to hold %q", r.MeasurementError.Note, w)
				}
			}
			if len(c.note) > 0 {
				var out bytes.Buffer
				if err := Write(&out, rep, "table"); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(out.String(), "note: main/"+c.metric+": measured imprecisely") {
					t.Errorf("the table does not print the note:\n%s", out.String())
				}
			}
		})
	}
}

// TestExactRowsUnchanged: (3) rows that no measurement error moves (both
// sides without measurement_error, or one on a figure that is not gated)
// are exactly what they were: the same JSON as the comparison of the
// same runs without any, verdicts and intervals alike (each end draws its
// own copy of the bootstrap's stream); a moved row is judged at its ends.
func TestExactRowsUnchanged(t *testing.T) {
	m := baseModel
	cmp := func(b, n *result.Result) *Report {
		rep, err := Compare(Sides{Base: []Input{{"b.json", b}}, New: []Input{{"n.json", n}}}, Config{Resamples: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	exact := cmp(m.result(1, "v1"), scaleE2Ep99(m.result(2, "v2"), 1.3))
	// Not gated: E2E from the intended time.
	notGated := cmp(lateBy(m.result(1, "v1"), "e2e_intended_ms", all, 50, true), lateBy(scaleE2Ep99(m.result(2, "v2"), 1.3), "e2e_intended_ms", all, 50, true))
	// Gated: E2E.
	moved := cmp(lateBy(m.result(1, "v1"), "e2e_ms", all, 20, true), lateBy(scaleE2Ep99(m.result(2, "v2"), 1.3), "e2e_ms", all, 20, true))
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if js(exact) != js(notGated) {
		t.Errorf("an error on a figure no gated row reads changed the report:\n%s\n%s", js(exact), js(notGated))
	}
	if r := row(t, exact, "main", "e2e_p99_ms"); r.Verdict != Regressed || r.MeasurementError != nil {
		t.Errorf("exact: e2e_p99_ms %s, measurement error %v", r.Verdict, r.MeasurementError)
	}
	for i, r := range moved.Stages[0].Rows {
		old := exact.Stages[0].Rows[i]
		if strings.HasPrefix(r.Metric, "e2e_p") && r.Gated {
			if r.MeasurementError == nil {
				t.Errorf("%s: not judged at its ends", r.Metric)
			}
			continue
		}
		if js(r) != js(old) {
			t.Errorf("%s changed:\n%s\n%s", r.Metric, js(old), js(r))
		}
	}
}

// TestUntrustedUsageCannotJudge: a gated figure that rests on the output
// token counts (TPOT, output_tps) of a side whose server's usage was not
// trusted is "?", and the comparison inconclusive (exit 4), saying why;
// figures that do not (E2E) are judged as ever.
func TestUntrustedUsageCannotJudge(t *testing.T) {
	m := baseModel
	withTPOT := func(r *result.Result) *result.Result {
		sc := &r.Scenarios[0]
		s := &sc.Series
		s.TPOTp50ms, s.TPOTp99ms, s.TPOTMeanMS = slices.Clone(s.ITLp50ms), slices.Clone(s.ITLp99ms), slices.Clone(s.ITLMeanMS)
		sc.Metrics["tpot_ms"] = sc.Metrics["itl_ms"]
		sc.Tokens.FromUsage = 100
		return r
	}
	b, n := withTPOT(m.result(1, "v1")), withTPOT(m.result(2, "v1"))
	untrusted := false
	n.Scenarios[0].Tokens.UsageTrusted = &untrusted
	n.Scenarios[0].Tokens.UsageUntrusted = "3 of 4 responses counted both ways claimed over 2× the output tokens"
	rep, err := Compare(Sides{Base: []Input{{"b.json", b}}, New: []Input{{"n.json", n}}}, Config{Resamples: 1000, Gate: []string{"tpot_p50_ms", "output_tps", "e2e_p99_ms"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, metric := range []string{"tpot_p50_ms", "output_tps"} {
		r := row(t, rep, "main", metric)
		if r.Verdict != Unknown || !slices.ContainsFunc(r.Warnings, func(w string) bool {
			return strings.Contains(w, "n.json: "+metric+" cannot be judged") && strings.Contains(w, "usage, untrusted: 3 of 4")
		}) {
			t.Errorf("%s: %s %v, want ? saying the usage was untrusted", metric, r.Verdict, r.Warnings)
		}
	}
	if r := row(t, rep, "main", "e2e_p99_ms"); r.Verdict != Same {
		t.Errorf("e2e_p99_ms: %s, want ~", r.Verdict)
	}
	if !strings.Contains(rep.Inconclusive, "no verdict on gated main/tpot_p50_ms, main/output_tps") {
		t.Errorf("inconclusive %q", rep.Inconclusive)
	}
}

// TestMeasurementErrorRepeatedRuns: repeated runs (the U test on whole-run
// figures) are judged at both ends too, each run's figure moved to the end
// of its range (the stage's P99 range): +10 % on E2E p99 stands with the new
// runs 20 ms early, and cannot be judged with them up to 150 ms early.
func TestMeasurementErrorRepeatedRuns(t *testing.T) {
	m := baseModel
	m.Secs = 30
	for _, c := range []struct {
		bound float64
		want  string
	}{{20, Regressed}, {150, Unknown}} {
		base := runs(m, 6, 100, "v1")
		nm := m
		nm.P99Factor = 1.10
		nw := runs(nm, 6, 200, "v2")
		for _, in := range nw {
			lateBy(in.Result, "e2e_ms", all, c.bound, true)
		}
		rep, err := Compare(Sides{Base: base, New: nw}, Config{Seed: 1, Gate: []string{"e2e_p99_ms"}})
		if err != nil {
			t.Fatal(err)
		}
		r := row(t, rep, "main", "e2e_p99_ms")
		if r.Method != "mann-whitney" || r.Verdict != c.want || r.MeasurementError == nil {
			t.Errorf("new runs up to %g ms early: %s by %s, want %s judged at both ends: %v", c.bound, r.Verdict, r.Method, c.want, r.Warnings)
		}
	}
}
