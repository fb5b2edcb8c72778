// Package htmlreport renders results as one self-contained HTML file: the
// summary and verdict, per-stage tables, latency spectra and CDFs from the
// exact histograms, per-second time lines, server metrics, sweep curves and
// provenance, with Apache ECharts embedded so the page opens with no
// network. Several results are overlaid.
//
// Stage: outputs.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package htmlreport

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spate-dev/spate/result"
)

// echartsJS is Apache ECharts (npm package echarts, dist/echarts.min.js;
// Apache-2.0, see assets/LICENSE and assets/NOTICE).
//
//go:embed assets/echarts.min.js
var echartsJS string

//go:embed assets/report.js
var reportJS string

//go:embed assets/report.css
var reportCSS string

//go:embed assets/report.html.tmpl
var pageTemplate string

// EChartsVersion is the version of the embedded ECharts.
const EChartsVersion = "6.1.0"

// Options tune a report.
type Options struct {
	// Title heads the page (default "spate report").
	Title string
	// Labels name the results in overlays and headings, one per result
	// (default "run 1", "run 2", ...).
	Labels []string
	// Generated is the time printed as the report's making (default now);
	// tests set it for stable output.
	Generated time.Time
}

// Data is what the page's script draws: the charts by section.
type Data struct {
	Latency   []Chart `json:"latency"`
	Timeline  []Chart `json:"timeline"`
	Server    []Chart `json:"server"`
	Sweep     []Chart `json:"sweep"`
	Breakdown []Chart `json:"breakdown"`
}

// Charts computes the charts of a report on results.
func Charts(results []*result.Result, labels []string) (Data, error) {
	runs := makeRuns(results, labels)
	var d Data
	var err error
	if d.Latency, err = latencyCharts(runs); err != nil {
		return d, err
	}
	d.Timeline = timelineCharts(runs)
	d.Server = serverCharts(runs)
	d.Sweep = sweepCharts(runs)
	d.Breakdown = breakdownCharts(runs)
	return d, nil
}

func makeRuns(results []*result.Result, labels []string) []run {
	runs := make([]run, len(results))
	for i, r := range results {
		l := fmt.Sprintf("run %d", i+1)
		if i < len(labels) && labels[i] != "" {
			l = labels[i]
		}
		runs[i] = run{label: l, res: r}
	}
	return runs
}

// page is the template's data.
type page struct {
	Title     string
	Generated string
	Runs      []runView
	Figures   bool // some run has feature sections (checks, chaos, ...)
	Data      Data
	NCharts   int
	ECharts   template.JS
	Script    template.JS
	Style     template.CSS
	Version   string
}

var tmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms": ms, "num": num, "pct": pct,
}).Parse(pageTemplate))

// defaultTitle names the page after what was run: the experiment file's
// name (or, without one, the model), and when it started.
func defaultTitle(r *result.Result) string {
	name := strings.TrimSuffix(filepath.Base(r.Config.Experiment), filepath.Ext(r.Config.Experiment))
	switch {
	case r.Config.Experiment == "" && r.Provenance.Model != "":
		name = r.Provenance.Model
	case r.Config.Experiment == "":
		return "spate report"
	}
	if r.StartedAt.IsZero() {
		return "spate: " + name
	}
	return "spate: " + name + ", " + r.StartedAt.UTC().Format("2006-01-02 15:04 MST")
}

// Render writes one self-contained HTML report of results to w. Every
// string from the results is escaped.
func Render(w io.Writer, results []*result.Result, opts Options) error {
	if len(results) == 0 {
		return fmt.Errorf("rendering HTML report: no result given")
	}
	data, err := Charts(results, opts.Labels)
	if err != nil {
		return fmt.Errorf("rendering HTML report: %w", err)
	}
	p := page{
		Title: opts.Title, Data: data, Version: EChartsVersion,
		ECharts: template.JS(echartsJS), Script: template.JS(reportJS), Style: template.CSS(reportCSS),
	}
	if p.Title == "" {
		p.Title = defaultTitle(results[0])
	}
	gen := opts.Generated
	if gen.IsZero() {
		gen = time.Now()
	}
	p.Generated = gen.UTC().Format("2006-01-02 15:04:05 MST")
	for _, r := range makeRuns(results, opts.Labels) {
		v := newRunView(r)
		p.Figures = p.Figures || len(v.Figures) > 0
		p.Runs = append(p.Runs, v)
	}
	p.NCharts = len(data.Latency) + len(data.Timeline) + len(data.Server) + len(data.Sweep) + len(data.Breakdown)
	if err := tmpl.Execute(w, p); err != nil {
		return fmt.Errorf("rendering HTML report: %w", err)
	}
	return nil
}
