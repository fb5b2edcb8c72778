package htmlreport

import (
	"fmt"
	"math"
	"sort"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/result"
)

// Chart is one chart of the report in a form independent of the charting
// library: the page's script maps it onto an ECharts option.
type Chart struct {
	// ID is the chart's DOM id, unique in the page.
	ID    string `json:"id"`
	Title string `json:"title"`
	// XAxis is "value", "log", "percentile" (a log axis of 1/(1−q)
	// labelled with the percentile q) or "category" (see Categories).
	XAxis  string `json:"x_axis"`
	XName  string `json:"x_name"`
	YName  string `json:"y_name"`
	Series []Line `json:"series"`
	// Marks are vertical lines at x (stage boundaries).
	Marks []Mark `json:"marks,omitempty"`
	// Scatter draws points joined by lines with visible symbols (sweeps).
	Scatter bool `json:"scatter,omitempty"`
	// Bars draws bars; with XAxis "category" a point's x is the index of
	// its category in Categories.
	Bars       bool     `json:"bars,omitempty"`
	Categories []string `json:"categories,omitempty"`
}

// Line is one series of points.
type Line struct {
	Name   string       `json:"name"`
	Points [][2]float64 `json:"points"`
	// Step draws the series as a step function (per-second counts).
	Step bool `json:"step,omitempty"`
	// Dashed draws a dashed line (targets, p99 next to p50).
	Dashed bool `json:"dashed,omitempty"`
}

// Mark is a vertical marker line with a label.
type Mark struct {
	X     float64 `json:"x"`
	Label string  `json:"label"`
}

// latencyMetrics are the metrics given a percentile spectrum and a CDF.
var latencyMetrics = []struct{ key, label string }{
	{metrics.TTFT, "TTFT"},
	{metrics.ITL, "ITL"},
	{metrics.TPOT, "TPOT"},
	{metrics.E2E, "E2E"},
}

// spectrumPercentiles are the percentiles a spectrum is drawn at.
var spectrumPercentiles = []float64{0, 10, 20, 30, 40, 50, 60, 70, 75, 80, 85, 90, 92.5, 95, 96.875, 97.5, 98.4375, 99, 99.5, 99.9, 99.95, 99.99, 99.999}

// cdfPoints bounds the points of a CDF line.
const cdfPoints = 200

// Spectrum returns the percentile spectrum of h in milliseconds: points
// (1/(1−q), value at percentile q) for the percentiles a spectrum is drawn
// at that the count resolves, ending at the maximum.
func Spectrum(h *hdr.Histogram) [][2]float64 {
	n := h.TotalCount()
	if n == 0 {
		return nil
	}
	var pts [][2]float64
	for _, q := range spectrumPercentiles {
		// Beyond 1/n the percentiles only repeat the maximum.
		if q > 0 && 1-q/100 < (1-1e-9)/float64(n) {
			break
		}
		pts = append(pts, [2]float64{1 / (1 - q/100), float64(h.ValueAtPercentile(q)) / 1000})
	}
	last := pts[len(pts)-1][0]
	return append(pts, [2]float64{math.Max(last*2, float64(n)), float64(h.Max()) / 1000})
}

// CDF returns the cumulative distribution of h in milliseconds: points
// (value, fraction of values ≤ value), thinned to at most about cdfPoints
// points that keep the first and last.
func CDF(h *hdr.Histogram) [][2]float64 {
	n := h.TotalCount()
	if n == 0 {
		return nil
	}
	var pts [][2]float64
	var cum int64
	next := 0.0 // the next fraction at which a point is kept
	bars := h.Distribution()
	for _, b := range bars {
		if b.Count == 0 {
			continue
		}
		cum += b.Count
		f := float64(cum) / float64(n)
		// A bar holds the values equivalent to its lowest; the value is
		// reported as the bar's highest equivalent value, as
		// ValueAtPercentile does.
		v := float64(b.To) / 1000
		if f >= next || cum == n || len(pts) == 0 {
			pts = append(pts, [2]float64{v, f})
			next = f + 1.0/cdfPoints
		}
	}
	return pts
}

// decode decodes the named histogram of a scenario, nil when absent.
func decode(r *result.Result, scenario, metric string) (*hdr.Histogram, error) {
	s, ok := r.Histograms[scenario][metric]
	if !ok || s == "" {
		return nil, nil
	}
	h, err := metrics.Decode(s)
	if err != nil {
		return nil, fmt.Errorf("scenario %s, histogram %s: %w", scenario, metric, err)
	}
	return h, nil
}

// run pairs a result with the label its series carry.
type run struct {
	label string
	res   *result.Result
}

// name labels a series of a scenario: "stage" for one run, "run · stage"
// for several.
func name(runs []run, r run, parts ...string) string {
	s := ""
	if len(runs) > 1 {
		s = r.label
	}
	for _, p := range parts {
		if p == "" {
			continue
		}
		if s != "" {
			s += " · "
		}
		s += p
	}
	return s
}

// latencyCharts returns a percentile spectrum and a CDF per latency
// metric that any run has a histogram of.
func latencyCharts(runs []run) ([]Chart, error) {
	var charts []Chart
	for _, m := range latencyMetrics {
		spec := Chart{ID: "spectrum-" + m.key, Title: m.label + " percentile spectrum", XAxis: "percentile", XName: "percentile", YName: "ms"}
		cdf := Chart{ID: "cdf-" + m.key, Title: m.label + " CDF", XAxis: "value", XName: "ms", YName: "fraction ≤ x"}
		for _, r := range runs {
			for _, sc := range r.res.Scenarios {
				h, err := decode(r.res, sc.Name, m.key)
				if err != nil {
					return nil, fmt.Errorf("run %s: %w", r.label, err)
				}
				if h == nil || h.TotalCount() == 0 {
					continue
				}
				n := name(runs, r, sc.Name)
				spec.Series = append(spec.Series, Line{Name: n, Points: Spectrum(h)})
				cdf.Series = append(cdf.Series, Line{Name: n, Points: CDF(h)})
			}
		}
		if len(spec.Series) > 0 {
			charts = append(charts, spec, cdf)
		}
	}
	return charts, nil
}

// offsets returns each scenario's start in seconds from the run's first
// scenario's start (stages run one after another, each with its own time
// line); a scenario without a start time follows the previous one.
func offsets(r *result.Result) []float64 {
	out := make([]float64, len(r.Scenarios))
	if len(r.Scenarios) == 0 {
		return out
	}
	t0 := r.Scenarios[0].StartedAt
	prevEnd := 0.0
	for i, sc := range r.Scenarios {
		o := prevEnd
		if !sc.StartedAt.IsZero() && !t0.IsZero() {
			o = sc.StartedAt.Sub(t0).Seconds()
		}
		out[i] = o
		prevEnd = o + math.Max(sc.DurationS, float64(len(sc.Series.SentPerS)))
	}
	return out
}

// seriesSpec is one per-second series drawn on the time line.
type seriesSpec struct {
	label  string
	step   bool
	dashed bool
	values func(sc *result.Scenario) []float64
}

func ints[T int | int64](v []T) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// timelineSpecs are the time-line charts and their series.
var timelineSpecs = []struct {
	id, title, y string
	series       []seriesSpec
}{
	{"rate", "Sent vs completed rate", "requests/s", []seriesSpec{
		{label: "sent/s", step: true, values: func(sc *result.Scenario) []float64 { return ints(sc.Series.SentPerS) }},
		{label: "completed/s", step: true, values: func(sc *result.Scenario) []float64 { return ints(sc.Series.CompletedPerS) }},
		{label: "offered", dashed: true, values: targetLine},
	}},
	{"inflight", "Requests in flight (max per second)", "requests", []seriesSpec{
		{label: "in flight", step: true, values: func(sc *result.Scenario) []float64 { return ints(sc.Series.InFlight) }},
	}},
	{"ttft", "TTFT per second", "ms", []seriesSpec{
		{label: "TTFT p50", values: func(sc *result.Scenario) []float64 { return sc.Series.TTFTp50ms }},
		{label: "TTFT p99", dashed: true, values: func(sc *result.Scenario) []float64 { return sc.Series.TTFTp99ms }},
	}},
	{"e2e", "E2E per second", "ms", []seriesSpec{
		{label: "E2E p50", values: func(sc *result.Scenario) []float64 { return sc.Series.E2Ep50ms }},
		{label: "E2E p99", dashed: true, values: func(sc *result.Scenario) []float64 { return sc.Series.E2Ep99ms }},
	}},
	{"tokens", "Output tokens per second", "tokens/s", []seriesSpec{
		{label: "output tokens/s", step: true, values: func(sc *result.Scenario) []float64 { return ints(sc.Series.OutputTokens) }},
	}},
	{"errors", "Errors per second", "errors/s", []seriesSpec{
		{label: "errors/s", step: true, values: func(sc *result.Scenario) []float64 { return ints(sc.Series.ErrorsPerS) }},
	}},
}

// targetLine is the open-loop target rate over the stage's seconds (the
// ramp when there is one), empty for closed loop.
func targetLine(sc *result.Scenario) []float64 {
	n := len(sc.Series.SentPerS)
	if sc.Load.TargetRate <= 0 || n == 0 {
		return nil
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = sc.Load.TargetRate
		if sc.Load.RampFrom > 0 && n > 1 {
			out[i] = sc.Load.RampFrom + (sc.Load.TargetRate-sc.Load.RampFrom)*float64(i)/float64(n-1)
		}
	}
	return out
}

// timelineCharts returns the per-second charts of every run, scenarios
// laid end to end on one time axis with their boundaries marked. A
// latency second with no completion (0) is left out of the line.
func timelineCharts(runs []run) []Chart {
	var charts []Chart
	for _, spec := range timelineSpecs {
		c := Chart{ID: "series-" + spec.id, Title: spec.title, XAxis: "value", XName: "s", YName: spec.y}
		latency := spec.y == "ms"
		for _, r := range runs {
			off := offsets(r.res)
			for _, s := range spec.series {
				l := Line{Name: name(runs, r, s.label), Step: s.step, Dashed: s.dashed}
				for i := range r.res.Scenarios {
					sc := &r.res.Scenarios[i]
					for k, v := range s.values(sc) {
						if latency && v == 0 {
							continue
						}
						// A value covers [k, k+1): drawn at its middle.
						l.Points = append(l.Points, [2]float64{off[i] + float64(k) + 0.5, v})
					}
				}
				if len(l.Points) > 0 {
					c.Series = append(c.Series, l)
				}
			}
			if len(r.res.Scenarios) > 1 {
				for i, sc := range r.res.Scenarios {
					c.Marks = append(c.Marks, Mark{X: off[i], Label: name(runs, r, sc.Name)})
				}
			}
		}
		if len(c.Series) > 0 {
			charts = append(charts, c)
		}
	}
	return charts
}

// serverCharts returns one chart per unit of the scraped server series,
// on the same time axis as the time-line charts; none when no scenario
// has server metrics.
func serverCharts(runs []run) []Chart {
	byUnit := map[string]*Chart{}
	var units []string
	for _, r := range runs {
		off := offsets(r.res)
		for i, sc := range r.res.Scenarios {
			if sc.Server == nil {
				continue
			}
			keys := make([]string, 0, len(sc.Server.Series))
			for k := range sc.Server.Series {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				s := sc.Server.Series[k]
				unit := s.Unit
				if unit == "" {
					unit = "value"
				}
				c := byUnit[unit]
				if c == nil {
					c = &Chart{ID: fmt.Sprintf("server-%d", len(units)), Title: "Server metrics (" + unit + ")", XAxis: "value", XName: "s", YName: unit}
					byUnit[unit] = c
					units = append(units, unit)
				}
				l := Line{Name: name(runs, r, k, sc.Name)}
				for j, v := range s.Values {
					if v == nil || j >= len(sc.Server.OffsetsS) {
						continue
					}
					l.Points = append(l.Points, [2]float64{off[i] + sc.Server.OffsetsS[j], *v})
				}
				if len(l.Points) > 0 {
					c.Series = append(c.Series, l)
				}
			}
			if len(r.res.Scenarios) > 1 {
				for _, c := range byUnit {
					c.Marks = appendMark(c.Marks, Mark{X: off[i], Label: name(runs, r, sc.Name)})
				}
			}
		}
	}
	var charts []Chart
	for _, u := range units {
		if c := byUnit[u]; len(c.Series) > 0 {
			charts = append(charts, *c)
		}
	}
	return charts
}

func appendMark(ms []Mark, m Mark) []Mark {
	for _, x := range ms {
		if x == m {
			return ms
		}
	}
	return append(ms, m)
}

// sweepCharts returns, for runs of several stages, latency against
// completed throughput and goodput against offered rate, a point a stage.
func sweepCharts(runs []run) []Chart {
	lat := Chart{ID: "sweep-latency", Title: "Latency vs throughput (a point per stage)", XAxis: "value", XName: "completed requests/s", YName: "ms", Scatter: true}
	good := Chart{ID: "sweep-goodput", Title: "Goodput vs offered rate (a point per stage)", XAxis: "value", XName: "offered requests/s", YName: "requests/s", Scatter: true}
	for _, r := range runs {
		if len(r.res.Scenarios) < 2 {
			continue
		}
		p50 := Line{Name: name(runs, r, "TTFT p50")}
		p99 := Line{Name: name(runs, r, "TTFT p99"), Dashed: true}
		e99 := Line{Name: name(runs, r, "E2E p99"), Dashed: true}
		gp := Line{Name: name(runs, r, "goodput requests/s")}
		ach := Line{Name: name(runs, r, "completed requests/s"), Dashed: true}
		for _, sc := range r.res.Scenarios {
			x := sc.Throughput.RequestsPerS
			if d, ok := sc.Metrics[metrics.TTFT]; ok && d.Count > 0 {
				p50.Points = append(p50.Points, [2]float64{x, d.P50})
				p99.Points = append(p99.Points, [2]float64{x, d.P99})
			}
			if d, ok := sc.Metrics[metrics.E2E]; ok && d.Count > 0 {
				e99.Points = append(e99.Points, [2]float64{x, d.P99})
			}
			offered := sc.Load.TargetRate
			if offered <= 0 {
				offered = sc.Load.AchievedRate
			}
			gp.Points = append(gp.Points, [2]float64{offered, sc.Goodput.RequestsPerS})
			ach.Points = append(ach.Points, [2]float64{offered, x})
		}
		for _, l := range []Line{p50, p99, e99} {
			if len(l.Points) > 0 {
				lat.Series = append(lat.Series, l)
			}
		}
		good.Series = append(good.Series, gp, ach)
	}
	var charts []Chart
	for _, c := range []Chart{lat, good} {
		if len(c.Series) > 0 {
			charts = append(charts, c)
		}
	}
	return charts
}

// breakdownCharts returns, per label of any stage's breakdown, TTFT p50
// and p99 and goodput by label value: points (value index, figure), the
// values named in Categories.
func breakdownCharts(runs []run) []Chart {
	charts := map[string]*Chart{}
	var order []string
	for _, r := range runs {
		for _, sc := range r.res.Scenarios {
			labels := make([]string, 0, len(sc.Breakdown))
			for l := range sc.Breakdown {
				labels = append(labels, l)
			}
			sort.Strings(labels)
			for _, l := range labels {
				groups := sc.Breakdown[l]
				vals := make([]string, 0, len(groups))
				for v := range groups {
					vals = append(vals, v)
				}
				sort.Strings(vals)
				id := "breakdown-" + fmt.Sprint(len(order))
				c := charts[l]
				if c == nil {
					c = &Chart{ID: id, Title: "TTFT by " + l, XAxis: "category", XName: l, YName: "ms", Bars: true}
					charts[l] = c
					order = append(order, l)
				}
				p50 := Line{Name: name(runs, r, sc.Name, "TTFT p50")}
				p99 := Line{Name: name(runs, r, sc.Name, "TTFT p99")}
				for _, v := range vals {
					i := indexOf(&c.Categories, v)
					d := groups[v].Metrics[metrics.TTFT]
					if d.Count == 0 {
						continue
					}
					p50.Points = append(p50.Points, [2]float64{float64(i), d.P50})
					p99.Points = append(p99.Points, [2]float64{float64(i), d.P99})
				}
				if len(p50.Points) > 0 {
					c.Series = append(c.Series, p50, p99)
				}
			}
		}
	}
	var out []Chart
	for _, l := range order {
		if c := charts[l]; len(c.Series) > 0 {
			out = append(out, *c)
		}
	}
	return out
}

// indexOf returns the index of v in *cats, appending it when absent.
func indexOf(cats *[]string, v string) int {
	for i, c := range *cats {
		if c == v {
			return i
		}
	}
	*cats = append(*cats, v)
	return len(*cats) - 1
}
