package htmlreport

import (
	"bytes"
	"encoding/json"
	"html"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/verdict/threshold"
	"github.com/spate-dev/spate/result"
)

const evil = `</script><script>alert("x")</script><img src=x onerror=alert(1)>`

// sample is a result of two stages with histograms, series, thresholds,
// a breakdown and user strings that must be escaped.
func sample(t testing.TB) *result.Result {
	_, enc := msHist(t, 200)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := func(v float64) *float64 { return &v }
	sc := func(name string, start time.Time, rate float64) result.Scenario {
		return result.Scenario{
			Name: name, StartedAt: start, DurationS: 3,
			Load: result.Load{Mode: "open", TargetRate: rate, AchievedRate: rate * 0.9, Valid: rate < 15, InvalidCause: "generator_saturated",
				HTTPPhases: &result.HTTPPhases{ConnectMS: &result.Dist{Count: 4, P50: 0.12, P99: 0.3}, FirstByteMS: &result.Dist{Count: 30, P50: 40, P99: 44}}},
			Requests:   result.Requests{Total: 30, Succeeded: 29, Failed: 1, Errors: map[string]int{"http_500": 1}},
			Throughput: result.Throughput{RequestsPerS: rate * 0.9, OutputTokensPerS: 100 * rate},
			Metrics:    map[string]result.Dist{metrics.TTFT: {Count: 29, P50: 100, P99: 198}, metrics.E2E: {Count: 29, P50: 100, P99: 198}},
			Goodput:    result.Goodput{Fraction: 0.9, RequestsPerS: rate * 0.8},
			Series: result.Series{SentPerS: []int{3, 3, 4}, CompletedPerS: []int{2, 3, 4}, ErrorsPerS: []int{0, 1, 0}, InFlight: []int{2, 2, 2},
				OutputTokens: []int64{90, 100, 110}, TTFTp50ms: []float64{100, 100, 101}, TTFTp99ms: []float64{190, 198, 199},
				E2Ep50ms: []float64{100, 100, 101}, E2Ep99ms: []float64{190, 198, 199}},
			Breakdown: map[string]map[string]result.Group{"intent": {
				evil:  {Requests: result.Requests{Total: 10}, Metrics: map[string]result.Dist{metrics.TTFT: {Count: 10, P50: 90, P99: 150}}},
				"faq": {Requests: result.Requests{Total: 20}, Metrics: map[string]result.Dist{metrics.TTFT: {Count: 20, P50: 110, P99: 199}}},
			}},
			Server: &result.Server{OffsetsS: []float64{0, 1, 2}, Series: map[string]result.ServerSeries{
				"kv_cache_usage": {Unit: "ratio", Values: []*float64{f(0.1), f(0.2), f(0.3)}}}},
			Thresholds: []threshold.Outcome{{Expr: "p99(ttft) < 150ms", Value: 198, Pass: false}},
		}
	}
	r := &result.Result{
		Schema: result.Schema, SpateVersion: "test", StartedAt: t0, EndedAt: t0.Add(7 * time.Second),
		Fingerprint: "0123456789abcdef", Provenance: result.Provenance{Model: evil, Target: "http://127.0.0.1:1/v1"},
		Scenarios:  []result.Scenario{sc("low", t0, 10), sc(evil, t0.Add(3*time.Second), 20)},
		Histograms: map[string]map[string]string{"low": {metrics.TTFT: enc, metrics.E2E: enc}, evil: {metrics.TTFT: enc}},
		Warnings:   []string{evil},
	}
	return r
}

// dataOf extracts the chart data the page carries.
func dataOf(t *testing.T, page string) Data {
	t.Helper()
	const open = `<script type="application/json" id="spate-data">`
	i := strings.Index(page, open)
	if i < 0 {
		t.Fatal("no #spate-data in the page")
	}
	rest := page[i+len(open):]
	j := strings.Index(rest, "</script>")
	var d Data
	if err := json.Unmarshal([]byte(rest[:j]), &d); err != nil {
		t.Fatalf("page data: %v", err)
	}
	return d
}

func TestRenderEscapesAndCarriesTheCharts(t *testing.T) {
	r := sample(t)
	var b bytes.Buffer
	if err := Render(&b, []*result.Result{r}, Options{Generated: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{`<script>alert("x")`, `<img src=x`} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds unescaped %q", bad)
		}
	}
	// The user string is shown, escaped, in the tables.
	if !strings.Contains(page, html.EscapeString(`<img src=x onerror=alert(1)>`)) && !strings.Contains(page, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Error("the escaped stage name is not in the page")
	}
	want, err := Charts([]*result.Result{r}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := dataOf(t, page)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("page data differs from Charts:\n got %+v\nwant %+v", got, want)
	}
	// 2 metrics × 2 + rate, in flight, ttft, e2e, tokens, errors + 1 server + 2 sweep + 1 breakdown.
	n := len(got.Latency) + len(got.Timeline) + len(got.Server) + len(got.Sweep) + len(got.Breakdown)
	if n != 14 || !strings.Contains(page, `data-charts="14"`) {
		t.Errorf("%d charts (latency %d timeline %d server %d sweep %d breakdown %d), want 14 and the body to say so",
			n, len(got.Latency), len(got.Timeline), len(got.Server), len(got.Sweep), len(got.Breakdown))
	}
	for _, c := range append(append(append(append(got.Latency, got.Timeline...), got.Server...), got.Sweep...), got.Breakdown...) {
		if !strings.Contains(page, `<div class="chart" id="`+c.ID+`">`) {
			t.Errorf("no container for chart %s", c.ID)
		}
	}
	for _, s := range []string{"thresholds FAIL", "measurement not valid in 1 of 2 stages", "p99(ttft) &lt; 150ms", "0123456789abcdef", "Breakdown of stage low by intent", "made 1970-01-01 00:00:00 UTC"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	// Nothing is fetched: no external script, style or font (ECharts,
	// embedded whole, names its licences' URLs in comments).
	if !strings.Contains(page, echartsJS) {
		t.Fatal("ECharts is not embedded verbatim")
	}
	own := strings.Replace(page, echartsJS, "", 1)
	for _, s := range []string{"<script src", "<link ", "@import", "https://", "http://cdn"} {
		if strings.Contains(own, s) {
			t.Errorf("page refers to something outside it: %q", s)
		}
	}
}

func TestRenderOverlayAndErrors(t *testing.T) {
	a, b := sample(t), sample(t)
	var out bytes.Buffer
	if err := Render(&out, []*result.Result{a, b}, Options{Labels: []string{"base", "new"}, Title: "A vs B"}); err != nil {
		t.Fatal(err)
	}
	d := dataOf(t, out.String())
	if n := d.Latency[0].Series; len(n) != 4 || n[0].Name != "base · low" || n[2].Name != "new · low" {
		t.Errorf("overlay series %+v", n)
	}
	if !strings.Contains(out.String(), "<title>A vs B</title>") || !strings.Contains(out.String(), "2 runs overlaid") {
		t.Error("title or overlay note missing")
	}
	if err := Render(&out, nil, Options{}); err == nil {
		t.Error("no results: no error")
	}
	a.Histograms["low"][metrics.TTFT] = "%%%"
	if err := Render(&out, []*result.Result{a}, Options{}); err == nil || !strings.Contains(err.Error(), "low") {
		t.Errorf("corrupt histogram: error %v, want one naming the stage", err)
	}
}

// TestRenderFeatureFigures checks the feature sections of a result appear
// as text on the page, escaped, and that a result without them has none.
func TestRenderFeatureFigures(t *testing.T) {
	r := sample(t)
	slope := 1.5
	sc := &r.Scenarios[0]
	sc.Name = "<peak>"
	sc.Checks = &result.Checks{CheckFigures: result.CheckFigures{Checked: 10, Passed: 8, PassRate: 0.8, STPSChecked: 2.5}}
	sc.Throughput.STPS = 3
	sc.Resilience = &result.Resilience{SlopeWindowS: 10, SlopeWindows: 5, TTFTp99SlopeMSPerS: &slope,
		Recoveries: []result.Recovery{{Event: "load_step", Recovered: true, RecoveryS: 3}}}
	sc.Workflow = &result.Workflow{Name: "rag", Runs: 4, Succeeded: 4, Steps: []result.WorkflowStep{{Name: "embed", Runs: 4}}}
	sc.Server = &result.Server{EnergySource: "estimated", Figures: map[string]float64{"gpu_energy_j": 804, "gpu_power_mean_w": 402, "gpu_energy_j_per_output_token": 0.42, "gpu_energy_j_per_request": 26.8}}
	var b bytes.Buffer
	if err := Render(&b, []*result.Result{r}, Options{}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`<section id="figures">`, "Answer checks · &lt;peak&gt;", "8 of 10 answers passed their checks (80.0 %) · sTPS 3.00 tasks/s (checked 2.50)",
		"TTFT p99 slope &#43;1.50 ms/s (median over 5 windows of 10 s)", "recovery after load_step at 0 s: 3 s", "Workflow steps", "embed",
		"GPU energy · &lt;peak&gt;", "GPU 402 W mean, 804 J (estimated), 0.42 J/output token, 26.8 J/request"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "<peak>") {
		t.Error("a stage name went onto the page unescaped")
	}
	b.Reset()
	if err := Render(&b, []*result.Result{sample(t)}, Options{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `id="figures"`) {
		t.Error("a result without feature sections got a figures section")
	}
}

// TestDefaultTitle: a page is named after what was run (it was "spate
// report" for every run): the experiment file, else the model.
func TestDefaultTitle(t *testing.T) {
	at := time.Date(2026, 12, 5, 21, 40, 0, 0, time.UTC)
	for _, c := range []struct {
		r    result.Result
		want string
	}{
		{result.Result{Config: result.Config{Experiment: "examples/ci-gate.yaml"}, StartedAt: at}, "spate: ci-gate, 2026-12-05 21:40 UTC"},
		{result.Result{Provenance: result.Provenance{Model: "llama-3"}, StartedAt: at}, "spate: llama-3, 2026-12-05 21:40 UTC"},
		{result.Result{}, "spate report"},
	} {
		if got := defaultTitle(&c.r); got != c.want {
			t.Errorf("title %q, want %q", got, c.want)
		}
	}
}
