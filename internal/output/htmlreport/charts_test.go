package htmlreport

import (
	"math"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/result"
)

// msHist returns a histogram, as the result file stores it, of the
// values 1, 2, ..., n milliseconds (recorded in microseconds).
func msHist(t testing.TB, n int) (*hdr.Histogram, string) {
	t.Helper()
	h := hdr.New(1, int64(time.Hour/time.Microsecond), 3)
	for v := 1; v <= n; v++ {
		if err := h.RecordValue(int64(v) * 1000); err != nil {
			t.Fatal(err)
		}
	}
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	return h, string(b)
}

func near(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*math.Abs(want) {
		t.Errorf("%s = %v, want %v (±%.2g%%)", what, got, want, rel*100)
	}
}

func TestSpectrumOfKnownValues(t *testing.T) {
	h, _ := msHist(t, 1000)
	pts := Spectrum(h)
	at := map[float64]float64{}
	for _, p := range pts {
		at[p[0]] = p[1]
	}
	// x = 1/(1−q): the median is at 2, p90 at 10, p99 at 100, p99.9 at 1000.
	for _, c := range []struct{ x, ms float64 }{{1, 1}, {2, 500}, {10, 900}, {100, 990}, {1000, 999}} {
		got, ok := at[c.x]
		if !ok {
			// Floating point: find the nearest x.
			for x, v := range at {
				if math.Abs(x-c.x) < 1e-6*c.x {
					got, ok = v, true
				}
			}
		}
		if !ok {
			t.Fatalf("no spectrum point at x=%v in %v", c.x, pts)
		}
		near(t, "spectrum at x="+ftoa(c.x), got, c.ms, 0.001)
	}
	// 1000 values resolve p99.9 but not p99.95; the line ends at the max.
	last := pts[len(pts)-1]
	if math.Abs(last[0]-2000) > 1e-6 || math.Abs(last[1]-1000) > 1 {
		t.Errorf("last point %v, want [2000 ~1000]", last)
	}
	for i := 1; i < len(pts); i++ {
		if pts[i][0] <= pts[i-1][0] || pts[i][1] < pts[i-1][1] {
			t.Fatalf("spectrum not increasing at %d: %v", i, pts)
		}
	}
	// The same percentiles the result file's summary reports.
	d := metrics.Summarize(h, 1000)
	near(t, "p50 vs summary", at[2], d.P50, 1e-9)
	if Spectrum(hdr.New(1, 1000, 3)) != nil {
		t.Error("spectrum of an empty histogram is not nil")
	}
}

func ftoa(v float64) string { return time.Duration(v).String() }

func TestCDFOfKnownValues(t *testing.T) {
	h, _ := msHist(t, 1000)
	pts := CDF(h)
	if len(pts) < 150 || len(pts) > cdfPoints+2 {
		t.Fatalf("%d points, want about %d", len(pts), cdfPoints)
	}
	if first := pts[0]; math.Abs(first[0]-1) > 0.001 || first[1] != 0.001 {
		t.Errorf("first point %v, want [1 0.001]", first)
	}
	if last := pts[len(pts)-1]; math.Abs(last[0]-1000) > 1 || last[1] != 1 {
		t.Errorf("last point %v, want [~1000 1]", last)
	}
	for i, p := range pts {
		// Values are whole milliseconds, each in a bucket of its own, and
		// a point is at its bucket's highest value: the fraction ≤ v is
		// exactly ⌊v⌋/1000.
		want := math.Floor(p[0]) / 1000
		if math.Abs(p[1]-want) > 1e-9 {
			t.Errorf("point %d: F(%v) = %v, want %v", i, p[0], p[1], want)
		}
		if i > 0 && (p[0] <= pts[i-1][0] || p[1] <= pts[i-1][1]) {
			t.Fatalf("CDF not increasing at %d", i)
		}
	}
}

func TestLatencyChartsFromResult(t *testing.T) {
	_, enc := msHist(t, 100)
	r := &result.Result{
		Scenarios:  []result.Scenario{{Name: "a"}, {Name: "b"}},
		Histograms: map[string]map[string]string{"a": {metrics.TTFT: enc, metrics.E2E: enc}, "b": {metrics.TTFT: enc}},
	}
	cs, err := latencyCharts(makeRuns([]*result.Result{r, r}, []string{"base", ""}))
	if err != nil {
		t.Fatal(err)
	}
	// TTFT and E2E have histograms, ITL and TPOT none: 2 metrics × (spectrum, CDF).
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	want := []string{"spectrum-ttft_ms", "cdf-ttft_ms", "spectrum-e2e_ms", "cdf-e2e_ms"}
	if len(ids) != len(want) {
		t.Fatalf("charts %v, want %v", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("charts %v, want %v", ids, want)
		}
	}
	// Two runs overlaid: series carry the run's label.
	var names []string
	for _, s := range cs[0].Series {
		names = append(names, s.Name)
	}
	if len(names) != 4 || names[0] != "base · a" || names[3] != "run 2 · b" {
		t.Errorf("series names %q", names)
	}
	r.Histograms["a"][metrics.ITL] = "not base64!"
	if _, err := latencyCharts(makeRuns([]*result.Result{r}, nil)); err == nil {
		t.Error("a corrupt histogram gave no error")
	}
}

func TestTimelineLaysStagesEndToEnd(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &result.Result{Scenarios: []result.Scenario{
		{Name: "warm", StartedAt: t0, DurationS: 2, Load: result.Load{TargetRate: 4},
			Series: result.Series{SentPerS: []int{4, 4}, CompletedPerS: []int{1, 5}, ErrorsPerS: []int{0, 1},
				InFlight: []int{3, 2}, OutputTokens: []int64{10, 50}, TTFTp50ms: []float64{0, 80}, TTFTp99ms: []float64{0, 95}}},
		{Name: "peak", StartedAt: t0.Add(2500 * time.Millisecond), DurationS: 3, Load: result.Load{TargetRate: 8, RampFrom: 2},
			Series: result.Series{SentPerS: []int{2, 5, 8}, CompletedPerS: []int{2, 5, 8}, ErrorsPerS: []int{0, 0, 0},
				InFlight: []int{1, 1, 1}, OutputTokens: []int64{1, 2, 3}, TTFTp50ms: []float64{70, 71, 72}, TTFTp99ms: []float64{90, 91, 92}}},
	}}
	cs := timelineCharts(makeRuns([]*result.Result{r}, nil))
	byID := map[string]Chart{}
	for _, c := range cs {
		byID[c.ID] = c
	}
	rate := byID["series-rate"]
	if len(rate.Series) != 3 {
		t.Fatalf("rate chart series %+v", rate.Series)
	}
	sent := rate.Series[0].Points
	wantSent := [][2]float64{{0.5, 4}, {1.5, 4}, {3, 2}, {4, 5}, {5, 8}}
	if len(sent) != len(wantSent) {
		t.Fatalf("sent points %v, want %v", sent, wantSent)
	}
	for i := range sent {
		if math.Abs(sent[i][0]-wantSent[i][0]) > 1e-9 || sent[i][1] != wantSent[i][1] {
			t.Fatalf("sent points %v, want %v", sent, wantSent)
		}
	}
	// The target: 4/s flat, then the ramp 2 → 8 over three seconds.
	target := rate.Series[2].Points
	wantTarget := []float64{4, 4, 2, 5, 8}
	for i, p := range target {
		if p[1] != wantTarget[i] {
			t.Fatalf("target %v, want %v", target, wantTarget)
		}
	}
	if len(rate.Marks) != 2 || rate.Marks[0] != (Mark{0, "warm"}) || rate.Marks[1] != (Mark{2.5, "peak"}) {
		t.Errorf("marks %+v", rate.Marks)
	}
	// Seconds with no completion have no latency point.
	ttft := byID["series-ttft"].Series[0].Points
	if len(ttft) != 4 || ttft[0] != [2]float64{1.5, 80} {
		t.Errorf("ttft points %v", ttft)
	}
	if _, ok := byID["series-e2e"]; ok {
		t.Error("an E2E chart with no E2E series")
	}
	if e := byID["series-errors"].Series[0].Points; len(e) != 5 || e[1][1] != 1 {
		t.Errorf("errors %v", e)
	}
}

func TestServerAndSweepCharts(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &result.Result{Scenarios: []result.Scenario{
		{Name: "s1", StartedAt: t0, DurationS: 10, Load: result.Load{TargetRate: 2},
			Throughput: result.Throughput{RequestsPerS: 1.9}, Goodput: result.Goodput{RequestsPerS: 1.8},
			Metrics: map[string]result.Dist{metrics.TTFT: {Count: 5, P50: 50, P99: 90}, metrics.E2E: {Count: 5, P99: 900}},
			Server: &result.Server{OffsetsS: []float64{0, 5}, Series: map[string]result.ServerSeries{
				"kv_cache_usage":   {Unit: "ratio", Values: []*float64{f(0.1), f(0.4)}},
				"requests_waiting": {Unit: "requests", Values: []*float64{nil, f(3)}},
			}}},
		{Name: "s2", StartedAt: t0.Add(10 * time.Second), DurationS: 10, Load: result.Load{TargetRate: 4},
			Throughput: result.Throughput{RequestsPerS: 3.5}, Goodput: result.Goodput{RequestsPerS: 2},
			Metrics: map[string]result.Dist{metrics.TTFT: {Count: 5, P50: 70, P99: 300}}},
	}}
	runs := makeRuns([]*result.Result{r}, nil)
	sv := serverCharts(runs)
	if len(sv) != 2 || sv[0].YName != "ratio" || sv[1].YName != "requests" {
		t.Fatalf("server charts %+v", sv)
	}
	if p := sv[1].Series[0].Points; len(p) != 1 || p[0] != [2]float64{5, 3} {
		t.Errorf("requests_waiting points %v (null values are left out)", p)
	}
	sw := sweepCharts(runs)
	if len(sw) != 2 {
		t.Fatalf("sweep charts %+v", sw)
	}
	p99 := sw[0].Series[1]
	if p99.Name != "TTFT p99" || len(p99.Points) != 2 || p99.Points[1] != [2]float64{3.5, 300} {
		t.Errorf("TTFT p99 sweep %+v", p99)
	}
	if e := sw[0].Series[2]; len(e.Points) != 1 || e.Points[0] != [2]float64{1.9, 900} {
		t.Errorf("E2E p99 sweep %+v", e)
	}
	gp := sw[1].Series[0]
	if gp.Points[0] != [2]float64{2, 1.8} || gp.Points[1] != [2]float64{4, 2} {
		t.Errorf("goodput sweep %+v", gp)
	}
	// One stage: no sweep; no server metrics: no server chart.
	one := &result.Result{Scenarios: r.Scenarios[1:]}
	if c := sweepCharts(makeRuns([]*result.Result{one}, nil)); len(c) != 0 {
		t.Errorf("sweep of one stage: %+v", c)
	}
	if c := serverCharts(makeRuns([]*result.Result{one}, nil)); len(c) != 0 {
		t.Errorf("server charts without server metrics: %+v", c)
	}
}

func TestBreakdownCharts(t *testing.T) {
	g := func(p50, p99 float64) result.Group {
		return result.Group{Metrics: map[string]result.Dist{metrics.TTFT: {Count: 5, P50: p50, P99: p99}}}
	}
	r := &result.Result{Scenarios: []result.Scenario{
		{Name: "a", Breakdown: map[string]map[string]result.Group{"intent": {"faq": g(10, 20), "code": g(30, 60)}}},
		{Name: "b", Breakdown: map[string]map[string]result.Group{"intent": {"chat": g(5, 9), "faq": g(11, 22)}}},
	}}
	cs := breakdownCharts(makeRuns([]*result.Result{r}, nil))
	if len(cs) != 1 {
		t.Fatalf("charts %+v", cs)
	}
	c := cs[0]
	// Categories in first-seen order, sorted within a stage: code, faq, chat.
	if got := c.Categories; len(got) != 3 || got[0] != "code" || got[1] != "faq" || got[2] != "chat" {
		t.Fatalf("categories %q", got)
	}
	if len(c.Series) != 4 || c.Series[2].Name != "b · TTFT p50" {
		t.Fatalf("series %+v", c.Series)
	}
	// Stage b: chat (index 2) p50 5, faq (index 1) p50 11.
	if p := c.Series[2].Points; len(p) != 2 || p[0] != [2]float64{2, 5} || p[1] != [2]float64{1, 11} {
		t.Errorf("stage b p50 points %v", p)
	}
	if p := c.Series[1].Points; p[0] != [2]float64{0, 60} {
		t.Errorf("stage a p99 points %v", p)
	}
}
