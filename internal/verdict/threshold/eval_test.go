package threshold

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// key identifies one figure in fakeSource.
type key struct {
	agg    string
	pct    float64
	metric string
}

// fakeSource serves fixed figures and records the lookups it was asked for.
type fakeSource struct {
	vals  map[key]float64
	asked []key
}

func (f *fakeSource) Lookup(agg string, pct float64, metric string) (float64, bool) {
	k := key{agg, pct, metric}
	f.asked = append(f.asked, k)
	v, ok := f.vals[k]
	return v, ok
}

func TestEvalBoundaries(t *testing.T) {
	const limit = 800.0
	below, above := math.Nextafter(limit, 0), math.Nextafter(limit, math.Inf(1))
	tests := []struct {
		op                  string
		below, equal, above bool // want Pass for observed just below, at and just above the limit
	}{
		{"<", true, false, false},
		{"<=", true, true, false},
		{">", false, false, true},
		{">=", false, true, true},
		{"==", false, true, false},
		{"!=", true, false, true},
	}
	for _, tc := range tests {
		th, err := Parse("p99(ttft) " + tc.op + " 800ms")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			observed float64
			want     bool
		}{{below, tc.below}, {limit, tc.equal}, {above, tc.above}} {
			src := &fakeSource{vals: map[key]float64{{AggPercentile, 99, "ttft"}: c.observed}}
			out := th.Eval(src)
			if out.Pass != c.want || out.Err != "" || out.Value != c.observed {
				t.Errorf("%s with observed %v = %+v, want Pass=%v, Value=%v, no error",
					th.Expr, c.observed, out, c.want, c.observed)
			}
		}
	}
}

func TestEvalNotFinite(t *testing.T) {
	for _, op := range []string{"<", "<=", ">", ">=", "==", "!="} {
		th, err := Parse("rps " + op + " 10")
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			out := th.Eval(&fakeSource{vals: map[key]float64{{"", 0, "rps"}: v}})
			if out.Pass || out.Err == "" || out.Value != 0 {
				t.Errorf("%s with observed %v = %+v, want a failure with an error and Value 0", th.Expr, v, out)
			}
			if math.IsNaN(v) && !strings.Contains(out.Err, "NaN") {
				t.Errorf("%s with NaN: error %q does not say NaN", th.Expr, out.Err)
			}
			if _, err := json.Marshal(out); err != nil {
				t.Errorf("outcome for %v does not encode: %v", v, err)
			}
		}
	}
}

func TestEvalMissing(t *testing.T) {
	th, err := Parse("p99.9(e2e) < 5s")
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{vals: map[key]float64{{AggPercentile, 99, "e2e"}: 1}} // p99, not p99.9
	out := th.Eval(src)
	if out.Pass || !strings.Contains(out.Err, "p99.9(e2e) was not measured") {
		t.Errorf("missing figure: %+v, want a failure saying p99.9(e2e) was not measured", out)
	}
	if len(src.asked) != 1 || src.asked[0] != (key{AggPercentile, 99.9, "e2e"}) {
		t.Errorf("looked up %v, want [{percentile 99.9 e2e}]", src.asked)
	}

	// A Threshold built by hand, bypassing Parse's checks.
	hand := Threshold{Agg: AggMean, Metric: "latency", Op: "<", Value: 1}
	out = hand.Eval(&fakeSource{})
	if out.Pass || !strings.Contains(out.Err, `unknown metric "latency"`) || out.Expr != "mean(latency) < 1" {
		t.Errorf("unknown metric: %+v", out)
	}

	out = Threshold{Metric: "rps", Op: "=>", Value: 1}.Eval(&fakeSource{vals: map[key]float64{{"", 0, "rps"}: 5}})
	if out.Pass || !strings.Contains(out.Err, `invalid operator "=>"`) {
		t.Errorf("invalid operator: %+v", out)
	}

	out = Threshold{Metric: "rps", Op: "<", Value: math.NaN()}.Eval(&fakeSource{vals: map[key]float64{{"", 0, "rps"}: 5}})
	if out.Pass || !strings.Contains(out.Err, "invalid limit") {
		t.Errorf("NaN limit: %+v", out)
	}

	out = th.Eval(nil)
	if out.Pass || out.Err == "" {
		t.Errorf("nil source: %+v", out)
	}
}

func TestEvalLookupArguments(t *testing.T) {
	tests := []struct {
		expr string
		want key
	}{
		{"error_rate < 1%", key{"", 0, "error_rate"}},
		{"AVG(itl) < 30ms", key{AggMean, 0, "itl"}},
		{"p999(e2e) < 5s", key{AggPercentile, 99.9, "e2e"}},
		{"count(ttft) >= 100", key{AggCount, 0, "ttft"}},
	}
	for _, tc := range tests {
		th, err := Parse(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		src := &fakeSource{}
		th.Eval(src)
		if len(src.asked) != 1 || src.asked[0] != tc.want {
			t.Errorf("%s looked up %v, want [%v]", tc.expr, src.asked, tc.want)
		}
	}
}

func TestEvalAll(t *testing.T) {
	src := &fakeSource{vals: map[key]float64{
		{AggPercentile, 99, "ttft"}: 750,
		{"", 0, "error_rate"}:       0.002,
		{"", 0, "goodput"}:          0.97,
	}}
	parse := func(exprs ...string) []Threshold {
		var ts []Threshold
		for _, e := range exprs {
			th, err := Parse(e)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, th)
		}
		return ts
	}

	outs, ok := EvalAll(parse("p99(ttft) < 800ms", "goodput >= 95%"), src)
	if !ok || len(outs) != 2 || !outs[0].Pass || !outs[1].Pass {
		t.Errorf("all passing: ok=%v %+v", ok, outs)
	}

	outs, ok = EvalAll(parse("p99(ttft) < 800ms", "error_rate < 0.1%", "goodput >= 95%"), src)
	if ok || len(outs) != 3 || outs[1].Pass || !outs[0].Pass || !outs[2].Pass {
		t.Errorf("one failing: ok=%v %+v", ok, outs)
	}
	if outs[1].Expr != "error_rate < 0.1%" || outs[1].Value != 0.002 || outs[1].Err != "" {
		t.Errorf("failing outcome = %+v, want the expression as written and the observed 0.002", outs[1])
	}

	outs, ok = EvalAll(parse("p99(ttft) < 800ms", "p99(itl) < 50ms"), src)
	if ok || outs[1].Pass || outs[1].Err == "" {
		t.Errorf("one missing: ok=%v %+v", ok, outs)
	}

	outs, ok = EvalAll(nil, src)
	if !ok || outs == nil || len(outs) != 0 {
		t.Errorf("no thresholds: ok=%v outs=%#v, want true and an empty non-nil slice", ok, outs)
	}
}

func TestOutcomeJSON(t *testing.T) {
	tests := []struct {
		out  Outcome
		want string
	}{
		{Outcome{Expr: "p99(ttft) < 800ms", Value: 750.5, Pass: true}, `{"expr":"p99(ttft) < 800ms","value":750.5,"pass":true}`},
		{Outcome{Expr: "rps >= 10", Err: "rps was not measured in this run"}, `{"expr":"rps >= 10","value":0,"pass":false,"error":"rps was not measured in this run"}`},
	}
	for _, tc := range tests {
		// As the result file writes it: without HTML escaping of < and >.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(tc.out); err != nil {
			t.Fatal(err)
		}
		if b := strings.TrimSpace(buf.String()); b != tc.want {
			t.Errorf("json = %s, want %s", b, tc.want)
		}
	}
}

// boundedSource is a fakeSource whose figures carry a measurement error:
// the true value lies in [lo, hi].
type boundedSource struct {
	fakeSource
	lo, hi float64
}

func (b *boundedSource) Bounds(string, float64, string) (float64, float64, bool) {
	return b.lo, b.hi, true
}

// TestEvalJudgesBothEnds: a figure with a measurement error is judged at
// both ends of its range: the same outcome at both stands (pass or fail,
// with the range kept), a range on both sides of the limit cannot be
// judged, and == or != hold only with the limit outside the range.
func TestEvalJudgesBothEnds(t *testing.T) {
	tests := []struct {
		expr          string
		v, lo, hi     float64
		pass, unjudge bool
	}{
		{"p99(ttft) < 800ms", 105, 95, 105, true, false},   // a busy machine, far under the limit
		{"p99(ttft) < 800ms", 812, 805, 812, false, false}, // over, whatever the error
		{"p99(ttft) < 800ms", 812, 790, 812, false, true},  // the true value may be under
		{"p99(ttft) < 800ms", 799, 790, 801, false, true},
		{"p50(itl) > 10ms", 12, 9, 15, false, true},
		{"p50(itl) >= 10ms", 12, 10, 15, true, false},
		{"goodput >= 95%", 0.96, 0.94, 0.97, false, true},
		{"goodput >= 95%", 0.99, 0.95, 1, true, false},
		{"max(ttft) == 100ms", 100, 90, 100, false, true}, // the limit inside: either
		{"max(ttft) == 100ms", 95, 90, 99, false, false},  // the limit outside: never equal
		{"max(ttft) != 100ms", 95, 90, 99, true, false},
		{"max(ttft) != 100ms", 95, 90, 100, false, true},
	}
	for _, tc := range tests {
		th, err := Parse(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		src := &boundedSource{fakeSource: fakeSource{vals: map[key]float64{{th.Agg, th.Percentile, th.Metric}: tc.v}}, lo: tc.lo, hi: tc.hi}
		out := th.Eval(src)
		if out.Pass != tc.pass || out.Unjudged != tc.unjudge || out.Low == nil || *out.Low != tc.lo || *out.High != tc.hi {
			t.Errorf("%s measured %v in [%v, %v]: %+v, want pass %v, unjudged %v, the range kept", tc.expr, tc.v, tc.lo, tc.hi, out, tc.pass, tc.unjudge)
		}
		if tc.unjudge && !strings.Contains(out.Err, "on both sides of the limit") {
			t.Errorf("%s: error %q does not say why it cannot judge", tc.expr, out.Err)
		}
	}
}

// intervalSource is a fakeSource whose figures have a sampling interval.
type intervalSource struct{ fakeSource }

func (intervalSource) Interval(string, float64, string) (float64, float64, bool) {
	return 790, 840, true
}

// TestEvalKeepsInterval: a threshold is judged on its figure, its sampling
// interval kept beside it for the reader (812 fails < 800 ms although a
// repeat might land under it).
func TestEvalKeepsInterval(t *testing.T) {
	th, err := Parse("p99(ttft) < 800ms")
	if err != nil {
		t.Fatal(err)
	}
	out := th.Eval(&intervalSource{fakeSource{vals: map[key]float64{{AggPercentile, 99, "ttft"}: 812}}})
	if out.Pass || out.Unjudged || out.Interval == nil || out.Interval.Low != 790 || out.Interval.High != 840 {
		t.Fatalf("%+v: want a failure with the interval [790, 840] kept", out)
	}
}

// doubtedSource doubts the figures named in doubt.
type doubtedSource struct {
	fakeSource
	doubt map[string]string
}

func (d *doubtedSource) Doubt(_ string, _ float64, metric string) string { return d.doubt[metric] }

// TestEvalDoubted: a figure its source doubts (output tokens from usage
// that cannot be trusted) is unjudged whichever side of the limit it is
// on, saying why, with its measured value; a figure not doubted is judged
// as usual.
func TestEvalDoubted(t *testing.T) {
	src := &doubtedSource{
		fakeSource: fakeSource{vals: map[key]float64{{"", 0, "output_tps"}: 15046, {"", 0, "rps"}: 117}},
		doubt:      map[string]string{"output_tps": "usage cannot be trusted"},
	}
	for _, tc := range []struct {
		expr           string
		pass, unjudged bool
		err            string
	}{
		{"output_tps > 10", false, true, "measured 1.505e+04, but output_tps cannot be judged: usage cannot be trusted"},
		{"output_tps < 10", false, true, "usage cannot be trusted"},
		{"rps > 10", true, false, ""},
		{"rps < 10", false, false, ""},
	} {
		th, err := Parse(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		out := th.Eval(src)
		if out.Pass != tc.pass || out.Unjudged != tc.unjudged || !strings.Contains(out.Err, tc.err) || (tc.err == "") != (out.Err == "") {
			t.Errorf("%s = %+v, want pass %v, unjudged %v, error %q", tc.expr, out, tc.pass, tc.unjudged, tc.err)
		}
	}
}
