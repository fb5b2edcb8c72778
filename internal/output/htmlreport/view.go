package htmlreport

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/output/headline"
	"github.com/spate-dev/spate/internal/verdict"
	"github.com/spate-dev/spate/result"
)

// runView is what the page's tables show of one run.
type runView struct {
	Label   string
	Res     *result.Result
	Verdict string // PASS, FAIL, INCONCLUSIVE or NONE (no thresholds)
	// Headline is the knee or the capacity the summary leads with (nil:
	// the run has none, see headline.Of).
	Headline   *headline.Headline
	Invalid    int // stages whose measurement is not valid
	Notes      []string
	Stages     []stageView
	Thresholds []thresholdView
	Breakdowns []breakdownView
	Figures    []figureBlock
	Provenance [][2]string
}

// stageView is one row of the stage table and its latency rows.
type stageView struct {
	Sc      *result.Scenario
	Offered string
	// Goodput and GoodputPerS are the stage's goodput as its thresholds
	// judge it (from the intended send time on an open loop), GoodputNote
	// the figure from the send when the two differ.
	Goodput, GoodputPerS float64
	GoodputNote          string
	Mark                 string // the headline's kind when the row is one it comes from
	Errors               string
	Latency              []latencyRow
}

type latencyRow struct {
	Label string
	D     result.Dist
}

type thresholdView struct {
	Stage, Expr, Value, Status string
}

// breakdownView is one table: the groups of one label of one stage.
type breakdownView struct {
	Stage, Label string
	Groups       []groupView
}

type groupView struct {
	Value string
	G     result.Group
	TTFT  result.Dist
	E2E   result.Dist
}

// latencyRows are the rows of a stage's latency table, in order.
var latencyRows = []struct{ key, label string }{
	{metrics.TTFT, "TTFT"},
	{metrics.TTFTIntended, "TTFT (intended)"},
	{metrics.ITL, "ITL"},
	{metrics.TPOT, "TPOT"},
	{metrics.E2E, "E2E"},
	{metrics.E2EIntended, "E2E (intended)"},
}

func newRunView(r run) runView {
	res := r.res
	v := runView{Label: r.label, Res: res, Verdict: "NONE", Figures: figureBlocks(res)}
	if h, ok := headline.Of(res, headline.MinGoodput); ok {
		v.Headline = &h
	}
	n := 0
	for i := range res.Scenarios {
		sc := &res.Scenarios[i]
		n += len(sc.Thresholds)
		s := newStageView(res, sc)
		if v.Headline != nil && v.Headline.IsMarked(i) {
			s.Mark = v.Headline.Kind
		}
		v.Stages = append(v.Stages, s)
		for _, o := range sc.Thresholds {
			t := thresholdView{Stage: sc.Name, Expr: o.Expr, Value: fmt.Sprintf("%.4g", o.Value), Status: "pass"}
			if o.Low != nil && o.High != nil {
				t.Value += fmt.Sprintf(" (true value in [%.4g, %.4g])", *o.Low, *o.High)
			}
			if o.Interval != nil {
				t.Value += fmt.Sprintf(" · %.0f %% interval [%.4g, %.4g]", 100*metrics.IntervalLevel, o.Interval.Low, o.Interval.High)
			}
			switch {
			case o.Unjudged:
				t.Value, t.Status = o.Err, "unjudged"
			case o.Err != "":
				t.Value, t.Status = o.Err, "error"
			case !o.Pass:
				t.Status = "fail"
			}
			v.Thresholds = append(v.Thresholds, t)
		}
		if !sc.Load.Valid {
			v.Invalid++
			reason := sc.Load.InvalidReason
			if reason == "" {
				reason = sc.Load.InvalidCause
			}
			v.Notes = append(v.Notes, fmt.Sprintf("stage %s: measurement not valid: %s", sc.Name, reason))
		}
		if t := metrics.IntervalText(sc.Intervals); t != "" {
			v.Notes = append(v.Notes, fmt.Sprintf("stage %s: sampling intervals, %s", sc.Name, t))
		}
		if t := metrics.ErrorText(sc.MeasurementError); t != "" {
			v.Notes = append(v.Notes, fmt.Sprintf("stage %s: measurement error: %s; every threshold judged at both ends", sc.Name, t))
		}
		for _, w := range sc.Warnings {
			v.Notes = append(v.Notes, fmt.Sprintf("stage %s: %s", sc.Name, w))
		}
		v.Breakdowns = append(v.Breakdowns, breakdowns(sc)...)
	}
	if n > 0 {
		switch {
		case res.ThresholdsPassed:
			v.Verdict = "PASS"
		case verdict.Failed(res):
			v.Verdict = "FAIL"
		default:
			v.Verdict = "INCONCLUSIVE" // thresholds that could not be judged, none failed
		}
	}
	if res.Interrupted {
		v.Notes = append(v.Notes, "interrupted: the result holds what was measured until then")
	}
	if res.Aborted != "" {
		v.Notes = append(v.Notes, "aborted: "+res.Aborted)
	}
	v.Notes = append(v.Notes, res.Warnings...)
	p := res.Provenance
	for _, kv := range [][2]string{
		{"spate version", res.SpateVersion},
		{"started", res.StartedAt.UTC().Format("2006-01-02 15:04:05 MST")},
		{"ended", res.EndedAt.UTC().Format("2006-01-02 15:04:05 MST")},
		{"fingerprint", res.Fingerprint},
		{"model", p.Model},
		{"SUT version", p.SUTVersion},
		{"target", p.Target},
		{"API", p.API},
		{"tokenizer", p.Tokenizer},
		{"workload sha256", p.WorkloadSHA256},
		{"experiment", res.Config.Experiment},
		{"experiment sha256", p.ExperimentSHA256},
		{"SLO", res.Config.SLO},
		{"seed", fmt.Sprint(res.Config.Seed)},
	} {
		if kv[1] != "" {
			v.Provenance = append(v.Provenance, kv)
		}
	}
	if res.Shard != nil {
		v.Provenance = append(v.Provenance, [2]string{"shard", fmt.Sprintf("%+v", *res.Shard)})
	}
	return v
}

func newStageView(res *result.Result, sc *result.Scenario) stageView {
	s := stageView{Sc: sc, Offered: "-"}
	var intended bool
	s.Goodput, s.GoodputPerS, intended = res.JudgedGoodput(sc)
	if intended && math.Abs(s.Goodput-sc.Goodput.Fraction) > 0.01 {
		s.GoodputNote = fmt.Sprintf("from the intended send time, as thresholds judge it; from the send %.1f %%", 100*sc.Goodput.Fraction)
	}
	switch {
	case sc.Load.Mode == "closed" && sc.Load.Concurrency > 0:
		s.Offered = fmt.Sprintf("concurrency %d", sc.Load.Concurrency)
	case sc.Load.RampFrom > 0:
		s.Offered = fmt.Sprintf("%.4g→%.4g/s", sc.Load.RampFrom, sc.Load.TargetRate)
	case sc.Load.TargetRate > 0:
		s.Offered = fmt.Sprintf("%.4g/s", sc.Load.TargetRate)
	case sc.Load.TargetTokenRate > 0:
		s.Offered = fmt.Sprintf("%.4g tokens/s", sc.Load.TargetTokenRate)
	}
	var errs []string
	for k, n := range sc.Requests.Errors {
		errs = append(errs, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(errs)
	s.Errors = strings.Join(errs, ", ")
	for _, r := range latencyRows {
		if d, ok := sc.Metrics[r.key]; ok && d.Count > 0 {
			s.Latency = append(s.Latency, latencyRow{r.label, d})
		}
	}
	s.Latency = append(s.Latency, phaseRows(sc.Load.HTTPPhases)...)
	return s
}

func breakdowns(sc *result.Scenario) []breakdownView {
	labels := make([]string, 0, len(sc.Breakdown))
	for l := range sc.Breakdown {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	var out []breakdownView
	for _, l := range labels {
		b := breakdownView{Stage: sc.Name, Label: l}
		vals := make([]string, 0, len(sc.Breakdown[l]))
		for v := range sc.Breakdown[l] {
			vals = append(vals, v)
		}
		sort.Strings(vals)
		for _, v := range vals {
			g := sc.Breakdown[l][v]
			b.Groups = append(b.Groups, groupView{Value: v, G: g, TTFT: g.Metrics[metrics.TTFT], E2E: g.Metrics[metrics.E2E]})
		}
		out = append(out, b)
	}
	return out
}

// ms formats milliseconds with about three significant digits.
func ms(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// num formats a rate or count with one decimal.
func num(v float64) string { return fmt.Sprintf("%.1f", v) }

// pct formats a fraction as a percentage.
func pct(v float64) string { return fmt.Sprintf("%.1f %%", 100*v) }

// phaseRows are the latency table's rows of the HTTP phases
// (docs/figures.md, "HTTP phases"), each over the requests that had it
// (its count): DNS, connect and TLS only over those that opened a
// connection.
func phaseRows(p *result.HTTPPhases) []latencyRow {
	if p == nil {
		return nil
	}
	var rows []latencyRow
	for _, r := range []struct {
		label string
		d     *result.Dist
	}{{"HTTP DNS (new connections)", p.DNSMS}, {"HTTP connect (new connections)", p.ConnectMS}, {"HTTP TLS (new connections)", p.TLSMS},
		{"HTTP write", p.WriteMS}, {"HTTP first byte", p.FirstByteMS}} {
		if r.d != nil && r.d.Count > 0 {
			rows = append(rows, latencyRow{r.label, *r.d})
		}
	}
	return rows
}
