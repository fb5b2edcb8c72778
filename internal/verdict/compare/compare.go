package compare

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"golang.org/x/perf/benchmath"

	"github.com/spate-dev/spate/result"
)

// Verdicts of a row.
const (
	Improved  = "improved"
	Regressed = "regressed"
	Same      = "~"
	Unknown   = "?" // not enough data for a verdict; see the row's warnings
)

// Config tunes a comparison. The zero value of each field means its default.
type Config struct {
	// Alpha is the significance level (default 0.01); intervals are at
	// 1−Alpha.
	Alpha float64
	// Window is the window length in seconds (default 5).
	Window int
	// Settle is the seconds left out after each stage's warm-up, while
	// requests in flight build up (default 1; negative for none).
	Settle int
	// Metrics are the metric names to report (default: all of Metrics).
	Metrics []string
	// Gate are the metric names whose regression fails the comparison
	// (default DefaultGate; an empty non-nil slice gates nothing).
	Gate []string
	// Seed seeds the bootstrap (default 1).
	Seed uint64
	// Resamples is the number of bootstrap resamples (default 4000).
	Resamples int
	// MinWindows is the fewest windows per side for a verdict (default 8).
	MinWindows int
	// MinRuns is the number of runs each side needs for the per-run
	// Mann-Whitney U test instead of pooled windows (default: the fewest
	// with which the U test can reach Alpha, 5 at α=0.01).
	MinRuns int
	// Force compares results whose fingerprints differ.
	Force bool
}

func (c Config) withDefaults() Config {
	if c.Alpha <= 0 || c.Alpha >= 1 {
		c.Alpha = 0.01
	}
	if c.Window <= 0 {
		c.Window = 5
	}
	if c.Settle == 0 {
		c.Settle = 1
	}
	if c.Settle < 0 {
		c.Settle = 0
	}
	if len(c.Metrics) == 0 {
		for _, m := range Metrics {
			c.Metrics = append(c.Metrics, m.Name)
		}
	}
	if c.Gate == nil {
		c.Gate = DefaultGate
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Resamples <= 0 {
		c.Resamples = 4000
	}
	if c.MinWindows <= 0 {
		c.MinWindows = 8
	}
	if c.MinRuns <= 0 {
		c.MinRuns = MinRunsFor(c.Alpha)
	}
	return c
}

// MinRunsFor is the fewest runs per side with which a two-sided
// Mann-Whitney U test can reach alpha: 2/C(2n, n) ≤ alpha.
func MinRunsFor(alpha float64) int {
	for n := 2; n < 50; n++ {
		if 2/binom(2*n, n) <= alpha {
			return n
		}
	}
	return 50
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// Input is one result file.
type Input struct {
	Path   string
	Result *result.Result
}

// Sides are the results compared: several per side for repeated runs,
// and optionally a reference workload run in each side's environment.
type Sides struct {
	Base, New       []Input
	BaseRef, NewRef []Input
}

// Report is the outcome of a comparison.
type Report struct {
	Alpha   float64  `json:"alpha"`
	WindowS int      `json:"window_s"`
	Base    []string `json:"base"`
	New     []string `json:"new"`
	// BaseRef and NewRef are the reference runs NEW was normalised by.
	BaseRef []string `json:"base_ref,omitempty"`
	NewRef  []string `json:"new_ref,omitempty"`
	// SUTVersions is "base → new" when the two sides ran different versions.
	SUTVersions string `json:"sut_versions,omitempty"`
	// Differences are fingerprint differences compared anyway (--force).
	Differences []string `json:"differences,omitempty"`
	Stages      []Stage  `json:"stages"`
	// Regressed lists "stage/metric" of every gated metric that regressed.
	Regressed []string `json:"regressed"`
	Warnings  []string `json:"warnings,omitempty"`
}

// Stage holds the rows of one stage (scenario name) present on both sides.
type Stage struct {
	Name string `json:"name"`
	Rows []Row  `json:"rows"`
}

// Value is a side's figure, with an interval when repeated runs give one.
type Value struct {
	Center float64  `json:"center"`
	Lo     *float64 `json:"lo,omitempty"`
	Hi     *float64 `json:"hi,omitempty"`
}

// Row is the comparison of one metric of one stage.
type Row struct {
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
	Gated  bool   `json:"gated"`
	// Method is how the verdict was reached: "welch+block-bootstrap"
	// (windows), "mann-whitney" (repeated runs), "ref-normalised
	// block-bootstrap" or "none".
	Method string `json:"method"`
	Base   Value  `json:"base"`
	New    Value  `json:"new"`
	// Change is new/base − 1, or new − base for fractions (Absolute).
	Change   float64 `json:"change"`
	ChangeLo float64 `json:"change_lo"`
	ChangeHi float64 `json:"change_hi"`
	Absolute bool    `json:"absolute,omitempty"`
	P        float64 `json:"p"`
	// N is the number of windows (or runs) on each side.
	NBase int `json:"n_base"`
	NNew  int `json:"n_new"`
	// RefRatio is mean(NEW ref)/mean(BASE ref), NEW's values were divided
	// by it.
	RefRatio *Value   `json:"ref_ratio,omitempty"`
	Verdict  string   `json:"verdict"`
	Warnings []string `json:"warnings,omitempty"`
}

// Compare judges the new results against the base ones.
func Compare(s Sides, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if len(s.Base) == 0 || len(s.New) == 0 {
		return nil, errors.New("compare needs at least one base and one new result")
	}
	if (len(s.BaseRef) == 0) != (len(s.NewRef) == 0) {
		return nil, errors.New("normalising needs a reference run on both sides (--base-ref and --new-ref)")
	}
	metrics := make([]Metric, 0, len(cfg.Metrics))
	for _, name := range cfg.Metrics {
		m, ok := MetricByName(name)
		if !ok {
			return nil, fmt.Errorf("unknown metric %q (known: %s)", name, metricNames())
		}
		metrics = append(metrics, m)
	}
	for _, name := range cfg.Gate {
		if _, ok := MetricByName(name); !ok && name != CapacityMetric {
			return nil, fmt.Errorf("unknown gated metric %q (known: %s)", name, metricNames())
		}
	}
	rep := &Report{Alpha: cfg.Alpha, WindowS: cfg.Window, Base: paths(s.Base), New: paths(s.New),
		BaseRef: paths(s.BaseRef), NewRef: paths(s.NewRef), Stages: []Stage{}, Regressed: []string{}}
	if err := checkSides(s, cfg, rep); err != nil {
		return nil, err
	}
	for _, in := range slices.Concat(s.Base, s.New, s.BaseRef, s.NewRef) {
		if in.Result.Interrupted {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: the run was interrupted; its figures cover part of the plan", in.Path))
		}
		for _, sc := range in.Result.Scenarios {
			if !sc.Load.Valid {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: stage %s is not a valid measurement: %s", in.Path, sc.Name, sc.Load.InvalidReason))
			}
		}
	}
	if allCapacity(s.Base, s.New) && len(s.BaseRef) == 0 {
		// Capacity searches: their trials are not stages to compare.
		row := capacityRow(s, cfg, rand.New(rand.NewPCG(cfg.Seed, 0x5eed)))
		row.Gated = slices.Contains(cfg.Gate, CapacityMetric)
		if row.Gated && row.Verdict == Regressed {
			rep.Regressed = append(rep.Regressed, "capacity/"+CapacityMetric)
		}
		rep.Stages = append(rep.Stages, Stage{Name: "capacity", Rows: []Row{row}})
		return rep, nil
	}
	repeated := len(s.Base) >= cfg.MinRuns && len(s.New) >= cfg.MinRuns && len(s.BaseRef) == 0
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	for _, name := range commonStages(s.Base, s.New, rep) {
		st := Stage{Name: name}
		for _, m := range metrics {
			var row Row
			switch {
			case len(s.BaseRef) > 0:
				row = normalisedRow(m, name, s, cfg, rng)
			case repeated || m.window == nil:
				row = runsRow(m, name, s, cfg, rng)
			default:
				row = windowRow(m, name, s, cfg, rng)
			}
			if row.Method == "none" && row.NBase == 0 && row.NNew == 0 {
				continue // neither side has the figure (goodput without SLOs)
			}
			row.Gated = slices.Contains(cfg.Gate, m.Name)
			if row.Gated && row.Verdict == Regressed {
				rep.Regressed = append(rep.Regressed, name+"/"+m.Name)
			}
			st.Rows = append(st.Rows, row)
		}
		rep.Stages = append(rep.Stages, st)
	}
	return rep, nil
}

func metricNames() string {
	var s string
	for i, m := range Metrics {
		if i > 0 {
			s += ", "
		}
		s += m.Name
	}
	return s
}

func paths(in []Input) []string {
	var out []string
	for _, i := range in {
		out = append(out, i.Path)
	}
	return out
}

// checkSides refuses results that measured different things, unless
// forced: every run of a side (and both references) must agree with its
// first, and the two sides may differ only in the SUT version.
func checkSides(s Sides, cfg Config, rep *Report) error {
	var diffs []string
	within := func(side string, in []Input) {
		for _, x := range in[1:] {
			for _, d := range differences(in[0].Result, x.Result, false) {
				diffs = append(diffs, fmt.Sprintf("%s %s vs %s: %s", side, in[0].Path, x.Path, d))
			}
		}
	}
	within("base", s.Base)
	within("new", s.New)
	for _, d := range differences(s.Base[0].Result, s.New[0].Result, true) {
		diffs = append(diffs, fmt.Sprintf("%s vs %s: %s", s.Base[0].Path, s.New[0].Path, d))
	}
	if len(s.BaseRef) > 0 {
		within("base-ref", s.BaseRef)
		within("new-ref", s.NewRef)
		for _, d := range differences(s.BaseRef[0].Result, s.NewRef[0].Result, true) {
			diffs = append(diffs, fmt.Sprintf("%s vs %s: %s", s.BaseRef[0].Path, s.NewRef[0].Path, d))
		}
	}
	if a, b := s.Base[0].Result.Provenance.SUTVersion, s.New[0].Result.Provenance.SUTVersion; a != b {
		rep.SUTVersions = fmt.Sprintf("%s → %s", show(a), show(b))
	}
	if len(diffs) == 0 {
		return nil
	}
	if !cfg.Force {
		return &MismatchError{Diffs: diffs}
	}
	rep.Differences = diffs
	rep.Warnings = append(rep.Warnings, fmt.Sprintf("compared despite %d fingerprint difference(s) (--force)", len(diffs)))
	return nil
}

// commonStages are the stage names every base and new result has, in the
// first base result's order.
func commonStages(base, nw []Input, rep *Report) []string {
	var out []string
	for _, sc := range base[0].Result.Scenarios {
		all := true
		for _, in := range slices.Concat(base, nw) {
			if scenario(in.Result, sc.Name) == nil {
				all = false
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("stage %s is not in %s: not compared", sc.Name, in.Path))
				break
			}
		}
		if all {
			out = append(out, sc.Name)
		}
	}
	return out
}

func scenario(r *result.Result, name string) *result.Scenario {
	for i := range r.Scenarios {
		if r.Scenarios[i].Name == name {
			return &r.Scenarios[i]
		}
	}
	return nil
}

// refScenario is the reference run's stage for a stage: the one of the
// same name, else its only stage.
func refScenario(r *result.Result, name string) *result.Scenario {
	if sc := scenario(r, name); sc != nil {
		return sc
	}
	if len(r.Scenarios) == 1 {
		return &r.Scenarios[0]
	}
	return nil
}

// span is where windows are cut in a result: after its warm-up and the
// settling seconds.
func span(r *result.Result, cfg Config) Span {
	skip := cfg.Settle
	if d, err := time.ParseDuration(r.Config.Warmup); err == nil && d > 0 {
		skip += int(math.Ceil(d.Seconds()))
	}
	return Span{Skip: skip, Window: cfg.Window}
}

// sideWindows are the metric's windows of a stage in each run of a side.
func sideWindows(in []Input, stage string, m Metric, cfg Config, ref bool) (runs [][]float64, warns []string) {
	for _, x := range in {
		sc := scenario(x.Result, stage)
		if ref {
			sc = refScenario(x.Result, stage)
		}
		if sc == nil {
			warns = append(warns, fmt.Sprintf("%s has no stage %s", x.Path, stage))
			continue
		}
		v, empty := Windows(&sc.Series, span(x.Result, cfg), m)
		if empty > 0 {
			warns = append(warns, fmt.Sprintf("%s: %d empty window(s) skipped", x.Path, empty))
		}
		runs = append(runs, v)
	}
	return runs, warns
}

// isAbsolute says whether a metric's change is a difference (fractions)
// rather than a ratio.
func isAbsolute(m Metric) bool { return m.Unit == "" }

// windowRow compares pooled windows: Welch's t-test for the p-value and a
// moving-block bootstrap for the interval of the change.
func windowRow(m Metric, stage string, s Sides, cfg Config, rng *rand.Rand) Row {
	row := Row{Metric: m.Name, Unit: m.Unit, Method: "welch+block-bootstrap", Absolute: isAbsolute(m), P: 1, Verdict: Unknown}
	bruns, w1 := sideWindows(s.Base, stage, m, cfg, false)
	nruns, w2 := sideWindows(s.New, stage, m, cfg, false)
	row.Warnings = append(w1, w2...)
	b, n := flatten(bruns), flatten(nruns)
	row.NBase, row.NNew = len(b), len(n)
	if len(b) > 0 {
		row.Base.Center = mean(b)
	}
	if len(n) > 0 {
		row.New.Center = mean(n)
	}
	row.Change = change(row.Base.Center, row.New.Center, row.Absolute)
	if len(b) < cfg.MinWindows || len(n) < cfg.MinWindows {
		row.Warnings = append(row.Warnings, fmt.Sprintf("need ≥ %d windows of %d s on each side for a verdict, have %d and %d: run longer or use a shorter --window", cfg.MinWindows, cfg.Window, len(b), len(n)))
		row.ChangeLo, row.ChangeHi = row.Change, row.Change
		return row
	}
	w := welchTest(b, n, cfg.Alpha)
	row.P = w.P
	br, nr := resampler{bruns}, resampler{nruns}
	boots := make([]float64, 0, cfg.Resamples)
	bms, nms := make([]float64, 0, cfg.Resamples), make([]float64, 0, cfg.Resamples)
	for range cfg.Resamples {
		bm, nm := br.mean(rng), nr.mean(rng)
		bms, nms = append(bms, bm), append(nms, nm)
		if c := change(bm, nm, row.Absolute); !math.IsNaN(c) && !math.IsInf(c, 0) {
			boots = append(boots, c)
		}
	}
	// Each side's interval: the same block bootstrap of its mean.
	row.Base.Lo, row.Base.Hi = sideCI(bms, cfg.Alpha)
	row.New.Lo, row.New.Hi = sideCI(nms, cfg.Alpha)
	if len(boots) < cfg.Resamples/2 {
		row.Warnings = append(row.Warnings, "the base is zero: no relative change")
		row.Verdict = Same
		return row
	}
	row.ChangeLo, row.ChangeHi, _ = percentileCI(boots, cfg.Alpha)
	row.Verdict = verdict(m, row.Change, w.P < cfg.Alpha && (row.ChangeLo > 0 || row.ChangeHi < 0))
	if w.P < cfg.Alpha && row.Verdict == Same {
		row.Warnings = append(row.Warnings, "Welch's test and the block bootstrap disagree: called no change")
	}
	return row
}

// runsRow compares the runs' whole-stage figures with a Mann-Whitney U
// test; each side's figure is the median of its runs with a 95 % interval
// (benchmath's distribution-free summary).
func runsRow(m Metric, stage string, s Sides, cfg Config, rng *rand.Rand) Row {
	row := Row{Metric: m.Name, Unit: m.Unit, Method: "mann-whitney", Absolute: isAbsolute(m), P: 1, Verdict: Unknown}
	collect := func(in []Input) []float64 {
		var v []float64
		for _, x := range in {
			if sc := scenario(x.Result, stage); sc != nil {
				if f, ok := m.run(sc); ok {
					v = append(v, f)
				}
			}
		}
		return v
	}
	b, n := collect(s.Base), collect(s.New)
	row.NBase, row.NNew = len(b), len(n)
	if len(b) == 0 || len(n) == 0 {
		row.Method = "none"
		if len(b)+len(n) > 0 {
			row.Warnings = append(row.Warnings, "no figure on one side (goodput needs an SLO on both)")
		}
		return row
	}
	th := &benchmath.Thresholds{CompareAlpha: cfg.Alpha}
	sb, sn := benchmath.NewSample(b, th), benchmath.NewSample(n, th)
	var bw, nw []string
	row.Base, bw = summary(sb)
	row.New, nw = summary(sn)
	row.Change = change(row.Base.Center, row.New.Center, row.Absolute)
	if len(b) < cfg.MinRuns || len(n) < cfg.MinRuns {
		row.Warnings = append(row.Warnings, fmt.Sprintf("%s has no per-second series: a verdict needs ≥ %d runs per side, have %d and %d", m.Name, cfg.MinRuns, len(b), len(n)))
		row.ChangeLo, row.ChangeHi = row.Change, row.Change
		return row
	}
	row.Warnings = append(append(row.Warnings, bw...), nw...)
	c := benchmath.AssumeNothing.Compare(sb, sn)
	row.P = c.P
	for _, w := range c.Warnings {
		row.Warnings = append(row.Warnings, w.Error())
	}
	boots := make([]float64, 0, cfg.Resamples)
	for range cfg.Resamples {
		if x := change(resampleMedian(b, rng), resampleMedian(n, rng), row.Absolute); !math.IsNaN(x) && !math.IsInf(x, 0) {
			boots = append(boots, x)
		}
	}
	if len(boots) > 0 {
		row.ChangeLo, row.ChangeHi, _ = percentileCI(boots, cfg.Alpha)
	}
	row.Verdict = verdict(m, row.Change, c.P < cfg.Alpha)
	return row
}

// normalisedRow compares NEW scaled by the reference ratio with BASE:
// change = (new/newRef)/(base/baseRef) − 1, its interval and p-value from
// a moving-block bootstrap of all four, so the references' noise widens
// the interval.
func normalisedRow(m Metric, stage string, s Sides, cfg Config, rng *rand.Rand) Row {
	row := Row{Metric: m.Name, Unit: m.Unit, Method: "ref-normalised block-bootstrap", Absolute: isAbsolute(m), P: 1, Verdict: Unknown}
	if m.window == nil || row.Absolute {
		row = windowOrRuns(m, stage, s, cfg, rng)
		row.Warnings = append(row.Warnings, "not normalised: only latencies and rates are scaled by the reference")
		return row
	}
	var warns []string
	side := func(in []Input, ref bool) [][]float64 {
		r, w := sideWindows(in, stage, m, cfg, ref)
		warns = append(warns, w...)
		return r
	}
	b, n, br, nr := side(s.Base, false), side(s.New, false), side(s.BaseRef, true), side(s.NewRef, true)
	row.Warnings = warns
	fb, fn, fbr, fnr := flatten(b), flatten(n), flatten(br), flatten(nr)
	row.NBase, row.NNew = len(fb), len(fn)
	for _, x := range [][]float64{fb, fn, fbr, fnr} {
		if len(x) < cfg.MinWindows {
			row.Warnings = append(row.Warnings, fmt.Sprintf("need ≥ %d windows in each of base, new and both references for a verdict", cfg.MinWindows))
			return row
		}
	}
	ratio := mean(fnr) / mean(fbr)
	row.Base.Center = mean(fb)
	row.New.Center = mean(fn) / ratio
	row.Change = change(row.Base.Center, row.New.Center, false)
	rb, rn, rbr, rnr := resampler{b}, resampler{n}, resampler{br}, resampler{nr}
	boots := make([]float64, 0, cfg.Resamples)
	ratios := make([]float64, 0, cfg.Resamples)
	for range cfg.Resamples {
		bm, nm, brm, nrm := rb.mean(rng), rn.mean(rng), rbr.mean(rng), rnr.mean(rng)
		x := (nm / nrm) / (bm / brm)
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			boots = append(boots, x-1)
			ratios = append(ratios, nrm/brm)
		}
	}
	if len(boots) < cfg.Resamples/2 {
		row.Warnings = append(row.Warnings, "a reference or the base is zero: no normalised change")
		return row
	}
	lo, hi, p := percentileCI(boots, cfg.Alpha)
	row.ChangeLo, row.ChangeHi, row.P = lo, hi, p
	rlo, rhi, _ := percentileCI(ratios, cfg.Alpha)
	row.RefRatio = &Value{Center: ratio, Lo: &rlo, Hi: &rhi}
	row.Verdict = verdict(m, row.Change, lo > 0 || hi < 0)
	return row
}

// windowOrRuns is the row of a metric that is not normalised.
func windowOrRuns(m Metric, stage string, s Sides, cfg Config, rng *rand.Rand) Row {
	if m.window == nil {
		return runsRow(m, stage, s, cfg, rng)
	}
	return windowRow(m, stage, s, cfg, rng)
}

func verdict(m Metric, change float64, significant bool) string {
	switch {
	case !significant || change == 0:
		return Same
	case (change > 0) == m.HigherIsBetter:
		return Improved
	}
	return Regressed
}

// change is new/base − 1, or new − base when absolute.
func change(base, nw float64, absolute bool) float64 {
	if absolute {
		return nw - base
	}
	if base == 0 {
		if nw == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return nw/base - 1
}

// summary is benchmath's distribution-free summary of a side's runs: the
// median and its 95 % interval, which needs at least 6 runs.
func summary(s *benchmath.Sample) (Value, []string) {
	sum := benchmath.AssumeNothing.Summary(s, 0.95)
	v := Value{Center: sum.Center}
	var warns []string
	for _, w := range sum.Warnings {
		warns = append(warns, "interval of a side's median: "+w.Error())
	}
	if !math.IsInf(sum.Lo, 0) && !math.IsInf(sum.Hi, 0) && !math.IsNaN(sum.Lo) {
		lo, hi := sum.Lo, sum.Hi
		v.Lo, v.Hi = &lo, &hi
	}
	return v, warns
}

func resampleMedian(xs []float64, rng *rand.Rand) float64 {
	r := make([]float64, len(xs))
	for i := range r {
		r[i] = xs[rng.IntN(len(xs))]
	}
	return resampleMedianOf(r)
}

// resampleMedianOf is the median of r, which it sorts.
func resampleMedianOf(r []float64) float64 {
	slices.Sort(r)
	if len(r)%2 == 1 {
		return r[len(r)/2]
	}
	return (r[len(r)/2-1] + r[len(r)/2]) / 2
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// sideCI is the 1−alpha percentile interval of a side's resampled means.
func sideCI(means []float64, alpha float64) (lo, hi *float64) {
	l, h, _ := percentileCI(means, alpha)
	return &l, &h
}
