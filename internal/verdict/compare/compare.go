package compare

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchmath"

	runverdict "github.com/spate-dev/spate/internal/verdict"
	"github.com/spate-dev/spate/result"
)

// Verdicts of a row.
const (
	Improved  = "improved"
	Regressed = "regressed"
	Same      = "~"
	Unknown   = "?" // not enough data for a verdict; see the row's warnings
)

// Defaults of Config.
const (
	// DefaultTargetWindows is the number of windows an automatic window
	// length aims for on the shorter run.
	DefaultTargetWindows = 20
	// DefaultMinWindows is the fewest windows a side needs for a verdict.
	DefaultMinWindows = 6
	// DefaultMaxLag1 is the lag-1 autocorrelation of the window series
	// above which an automatic window is widened (while enough windows
	// remain).
	DefaultMaxLag1 = 0.3
)

// Config tunes a comparison. The zero value of each field means its default.
type Config struct {
	// Alpha is the significance level (default 0.01); intervals are at
	// 1−Alpha. The gated rows are judged as one family at Alpha
	// (Holm–Bonferroni): the chance of any false red stays at Alpha
	// however many rows are gated.
	Alpha float64
	// Window is the window length in seconds; 0 chooses it per stage from
	// the runs' length (see ChooseWindow).
	Window int
	// TargetWindows is the number of windows an automatic window aims for
	// (default DefaultTargetWindows).
	TargetWindows int
	// MaxLag1 is the lag-1 autocorrelation an automatic window is widened
	// to stay under (default DefaultMaxLag1).
	MaxLag1 float64
	// Settle is the seconds left out after each stage's warm-up, while
	// requests in flight build up (default 1; negative for none).
	Settle int
	// Metrics are the metric names to report (default: all of Metrics).
	Metrics []string
	// Gate are the metric names whose regression fails the comparison
	// (default DefaultGate; an empty non-nil slice gates nothing).
	Gate []string
	// MinEffect overrides the practical margin of metrics by name (see
	// Metric.MinEffect and ParseMinEffect).
	MinEffect map[string]float64
	// Seed seeds the bootstrap (default 1).
	Seed uint64
	// Resamples is the number of bootstrap resamples (default 4000).
	Resamples int
	// MinWindows is the fewest windows per side for a verdict (default
	// DefaultMinWindows).
	MinWindows int
	// MinRuns is the number of runs each side needs for the per-run
	// Mann-Whitney U test instead of pooled windows (default: the fewest
	// with which the U test can reach Holm's first threshold, Alpha over
	// the gated rows: 7 at α=0.01 for the default gate on one stage, 5
	// with one gated metric).
	MinRuns int
	// Force compares results whose fingerprints differ.
	Force bool
	// AllowInvalid judges stages whose measurement was not valid instead
	// of calling the comparison inconclusive.
	AllowInvalid bool

	gateChosen    bool // Gate was given, not DefaultGate
	minRunsChosen bool // MinRuns was given, not derived from Alpha
	// family is the most gated rows the comparison can have
	// (familyBound): bootstrap p-values must be able to reach Alpha over
	// it.
	family int
	// end, when set, moves each side's figures to that end of their
	// measurement error (see precision.go).
	end *end
}

func (c Config) withDefaults() Config {
	if c.Alpha <= 0 || c.Alpha >= 1 {
		c.Alpha = 0.01
	}
	if c.Window < 0 {
		c.Window = 0
	}
	if c.TargetWindows <= 0 {
		c.TargetWindows = DefaultTargetWindows
	}
	if c.MaxLag1 <= 0 {
		c.MaxLag1 = DefaultMaxLag1
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
	c.gateChosen = c.Gate != nil
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
		c.MinWindows = DefaultMinWindows
	}
	c.minRunsChosen = c.MinRuns > 0
	if c.MinRuns <= 0 {
		c.MinRuns = MinRunsFor(c.Alpha)
	}
	c.family = max(c.family, 1)
	return c
}

// margin is the practical margin of a metric under cfg.
func (c Config) margin(m Metric) float64 {
	if v, ok := c.MinEffect[m.Name]; ok {
		return v
	}
	return m.MinEffect
}

// ParseGate is Config.Gate from the --gate flag's values: nil (DefaultGate)
// when the flag was not given, none of them for "none". An empty name is an
// error: an empty variable in a CI script must not gate nothing.
func ParseGate(values []string, given bool) ([]string, error) {
	switch {
	case !given:
		return nil, nil
	case len(values) == 1 && values[0] == "none":
		return []string{}, nil
	case len(values) == 0 || slices.Contains(values, ""):
		return nil, fmt.Errorf("--gate %q: name the metrics to gate (%s), or none", strings.Join(values, ","), MetricNames())
	}
	return values, nil
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
	Alpha float64 `json:"alpha"`
	// WindowS is the window length asked for; 0: chosen per stage (see
	// Stage.WindowS).
	WindowS int      `json:"window_s"`
	Base    []string `json:"base"`
	New     []string `json:"new"`
	// BaseRef and NewRef are the reference runs NEW was normalised by.
	BaseRef []string `json:"base_ref,omitempty"`
	NewRef  []string `json:"new_ref,omitempty"`
	// SUTVersions is "base → new" when the two sides ran different versions.
	SUTVersions string `json:"sut_versions,omitempty"`
	// Replicates says the runs differ in their seed only (independent
	// replicates), when they do.
	Replicates string `json:"replicates,omitempty"`
	// Differences are fingerprint differences compared anyway (--force).
	Differences []string `json:"differences,omitempty"`
	Stages      []Stage  `json:"stages"`
	// Regressed lists "stage/metric" of every gated metric that regressed,
	// judged as one family (Correction).
	Regressed []string `json:"regressed"`
	// Correction is the multiple-comparison correction over the gated
	// rows ("holm-bonferroni"), and Family the number of gated rows it is
	// over: a gated change stands when its adjusted p-value (Row.PHolm) is
	// below Alpha, so that the chance of any false red is at most Alpha.
	Correction string `json:"correction"`
	Family     int    `json:"family"`
	// Inconclusive, when no gated metric regressed, says why the
	// comparison cannot be trusted to have found none: a gated metric
	// got no verdict, or a stage was not a valid measurement (spate
	// compare exits 4). Empty when the verdict stands.
	Inconclusive string   `json:"inconclusive,omitempty"`
	Warnings     []string `json:"warnings,omitempty"`
}

// Stage holds the rows of one stage (scenario name) present on both sides.
type Stage struct {
	Name string `json:"name"`
	// WindowS is the window length the stage's series were cut into, and
	// Windows the number of whole windows of the shortest run; Lag1 is the
	// largest lag-1 autocorrelation of a gated metric's windows (bias
	// corrected), which the tests allow for.
	WindowS int     `json:"window_s"`
	Windows int     `json:"windows"`
	Lag1    float64 `json:"lag1"`
	Rows    []Row   `json:"rows"`
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
	// Change is new/base − 1, or new − base (Absolute: fractions and
	// figures near zero).
	Change   float64 `json:"change"`
	ChangeLo float64 `json:"change_lo"`
	ChangeHi float64 `json:"change_hi"`
	Absolute bool    `json:"absolute,omitempty"`
	// Margin is the practical margin: a significant change no larger than
	// it is called "~" (a ratio, or in the metric's unit when Absolute).
	Margin float64 `json:"margin"`
	P      float64 `json:"p"`
	// PHolm is a gated row's p-value adjusted by Holm–Bonferroni over the
	// report's gated rows (Report.Family); its change stands only when
	// this is below Alpha.
	PHolm *float64 `json:"p_holm,omitempty"`
	// N is the number of windows (or runs) on each side.
	NBase int `json:"n_base"`
	NNew  int `json:"n_new"`
	// RefRatio is mean(NEW ref)/mean(BASE ref), NEW's values were divided
	// by it.
	RefRatio *Value   `json:"ref_ratio,omitempty"`
	Verdict  string   `json:"verdict"`
	Warnings []string `json:"warnings,omitempty"`
	// MeasurementError is a gated row judged again at both ends of the
	// sides' measurement error, when a side has one that moves it: the
	// verdict stands when the gate says the same at both, else it is "?"
	// (docs/compare.md, "Measurement error").
	MeasurementError *Ends `json:"measurement_error,omitempty"`

	// ends are the row at the end least (0) and most (1) favourable to a
	// regression, before Holm's correction (applyHolm judges each end as
	// a family and then the row by both: judgeEnds).
	ends [2]*Row
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
		if !ok || name == CapacityMetric {
			return nil, fmt.Errorf("unknown metric %q (known: %s)", name, MetricNames())
		}
		metrics = append(metrics, m)
	}
	for _, name := range cfg.Gate {
		m, ok := MetricByName(name)
		if !ok {
			return nil, fmt.Errorf("unknown gated metric %q (known: %s)", name, MetricNames())
		}
		// A gated metric decides the exit: it is compared whatever
		// --metric lists.
		if name != CapacityMetric && !slices.Contains(cfg.Metrics, name) {
			metrics = append(metrics, m)
		}
	}
	if least := MinRunsFor(cfg.Alpha); cfg.MinRuns < least {
		return nil, fmt.Errorf("--min-runs %d: the U test cannot reach alpha %g with fewer than %d runs a side, so it could never find a change", cfg.MinRuns, cfg.Alpha, least)
	}
	for name := range cfg.MinEffect {
		if _, ok := MetricByName(name); !ok {
			return nil, fmt.Errorf("--min-effect: unknown metric %q (known: %s)", name, MetricNames())
		}
	}
	rep := &Report{Alpha: cfg.Alpha, WindowS: cfg.Window, Base: paths(s.Base), New: paths(s.New),
		BaseRef: paths(s.BaseRef), NewRef: paths(s.NewRef), Stages: []Stage{}, Regressed: []string{}}
	if err := checkSides(s, cfg, rep); err != nil {
		return nil, err
	}
	var invalid, notApplied []string // notApplied: no --allow-invalid accepts it
	for _, in := range slices.Concat(s.Base, s.New, s.BaseRef, s.NewRef) {
		why := ""
		switch r := in.Result; {
		case r.Interrupted:
			why = "was interrupted"
		case r.Aborted != "":
			why = "was aborted (" + r.Aborted + ")"
		}
		if why != "" {
			msg := fmt.Sprintf("%s: the run %s; its figures cover part of the plan", in.Path, why)
			rep.Warnings = append(rep.Warnings, msg)
			invalid = append(invalid, msg)
		}
	}
	if allCapacity(s.Base, s.New) && len(s.BaseRef) == 0 {
		// Capacity searches: their trials are not stages to compare.
		row := capacityRow(s, cfg, rand.New(rand.NewPCG(cfg.Seed, 0x5eed)))
		row.Gated = slices.Contains(cfg.Gate, CapacityMetric)
		rep.Stages = append(rep.Stages, Stage{Name: "capacity", Rows: []Row{row}})
		applyHolm(rep, cfg.Alpha)
		if cfg.AllowInvalid {
			invalid = nil
		}
		rep.Inconclusive = inconclusive(rep, invalid) // an interrupted search is partial
		return rep, nil
	}
	src := rand.NewPCG(cfg.Seed, 0x5eed)
	rng := rand.New(src)
	common, missing := commonStages(s.Base, s.New, rep)
	invalid = append(invalid, missing...)
	// Holm's first threshold is α over the gated rows: the U test must be
	// able to reach it, or repeated runs could never fail the gate.
	cfg.family = max(familyBound(metrics, cfg.Gate, len(common)), 1)
	need := MinRunsFor(cfg.Alpha / float64(cfg.family))
	switch {
	case !cfg.minRunsChosen:
		cfg.MinRuns = need
	case cfg.MinRuns < need:
		return nil, fmt.Errorf("--min-runs %d: the gated rows are judged as one family (Holm–Bonferroni over %d), whose first threshold α/%d = %.2g the U test cannot reach with fewer than %d runs a side: give --min-runs %d or more, or gate fewer metrics (--gate)", cfg.MinRuns, cfg.family, cfg.family, cfg.Alpha/float64(cfg.family), need, need)
	}
	repeated := len(s.Base) >= cfg.MinRuns && len(s.New) >= cfg.MinRuns && len(s.BaseRef) == 0
	for _, name := range common {
		for i, in := range slices.Concat(s.Base, s.New, s.BaseRef, s.NewRef) {
			sc := scenario(in.Result, name)
			if i >= len(s.Base)+len(s.New) {
				sc = refScenario(in.Result, name) // as normalising reads it
			}
			if sc != nil && !sc.Load.Valid {
				msg := fmt.Sprintf("%s: stage %s is not a valid measurement: %s", in.Path, name, sc.Load.InvalidReason)
				rep.Warnings = append(rep.Warnings, msg)
				if runverdict.Accepted(sc, true) {
					invalid = append(invalid, msg)
				} else {
					notApplied = append(notApplied, msg)
				}
			}
		}
		for _, in := range slices.Concat(s.Base, s.New) {
			if sc := scenario(in.Result, name); sc != nil {
				if failed, raise := drainFailures(&sc.Series); raise > drainFailShare {
					msg := fmt.Sprintf("%s: stage %s: %d requests failed after its last send (in the drain: timeouts?), outside the windows compared, and raise its error rate by %.1f pp", in.Path, name, failed, 100*raise)
					rep.Warnings = append(rep.Warnings, msg)
					invalid = append(invalid, msg)
				}
			}
		}
		st := Stage{Name: name}
		st.WindowS, st.Windows, st.Lag1 = chooseWindow(s, name, metrics, cfg)
		scfg := cfg
		scfg.Window = st.WindowS
		for _, m := range metrics {
			compute := func(c Config, rng *rand.Rand) Row {
				switch {
				case len(s.BaseRef) > 0:
					return normalisedRow(m, name, s, c, rng)
				case repeated || m.window == nil || !everyHas(s, name, m):
					return runsRow(m, name, s, c, rng)
				}
				return windowRow(m, name, s, c, rng)
			}
			// Each end of the measurement error draws the same resamples
			// as the measured row, which alone moves the shared stream on.
			state := *src
			row := compute(scfg, rng)
			row.Gated = slices.Contains(cfg.Gate, m.Name)
			if row.Method == "none" && row.NBase == 0 && row.NNew == 0 {
				if !row.Gated || !cfg.gateChosen {
					continue // neither side has the figure (goodput without SLOs)
				}
				// Gated by name: its absence is no verdict, not a pass.
				row.Warnings = append(row.Warnings, "neither side has this figure")
			}
			if why := usageDoubt(s, name, m); why != "" && row.Verdict != Unknown {
				row.Verdict = Unknown
				row.Warnings = append(row.Warnings, why)
			} else if row.Gated && row.Verdict != Unknown && imprecise(s, name, m, scfg) {
				for i, toward := range []bool{false, true} {
					ecfg, esrc := scfg, state
					ecfg.end = &end{toward: toward}
					e := compute(ecfg, rand.New(&esrc))
					e.Gated = true
					row.ends[i] = &e
				}
			}
			st.Rows = append(st.Rows, row)
		}
		rep.Stages = append(rep.Stages, st)
	}
	applyHolm(rep, cfg.Alpha)
	if cfg.AllowInvalid {
		invalid = nil
	}
	rep.Inconclusive = inconclusive(rep, append(invalid, notApplied...))
	return rep, nil
}

// metricLag1 is the lag-1 autocorrelation of a metric's per-second values
// in a stage, pooled over the runs of both sides (secondLag1).
func metricLag1(s Sides, stage string, m Metric, cfg Config) float64 {
	c := cfg
	c.Window = 1
	c.end = nil // a run's windows all move alike: their autocorrelation does not
	b, _ := sideWindows(s.Base, stage, m, c, sideBase)
	n, _ := sideWindows(s.New, stage, m, c, sideNew)
	return secondLag1(append(b, n...))
}

// everyHas says whether every run of both sides carries the metric's
// per-second columns for the stage (a result of an older spate may not:
// its runs are then compared whole).
func everyHas(s Sides, stage string, m Metric) bool {
	if m.has == nil {
		return true
	}
	for _, in := range slices.Concat(s.Base, s.New) {
		if sc := scenario(in.Result, stage); sc != nil && !m.has(&sc.Series) {
			return false
		}
	}
	return true
}

// inconclusive says why a comparison with no gated regression cannot be
// trusted to have found none, or "". With nothing gated (--gate none) there
// is no verdict to vouch for: the comparison is a report.
func inconclusive(rep *Report, invalid []string) string {
	if len(rep.Regressed) > 0 {
		return ""
	}
	gated := false
	for _, st := range rep.Stages {
		for _, r := range st.Rows {
			gated = gated || r.Gated
		}
	}
	if !gated && len(rep.Stages) > 0 {
		return ""
	}
	if len(rep.Stages) == 0 {
		return "no stage is in every result: nothing was compared"
	}
	var reasons []string
	var unknown []string
	first := ""
	for _, st := range rep.Stages {
		for _, r := range st.Rows {
			if r.Gated && r.Verdict == Unknown {
				unknown = append(unknown, st.Name+"/"+r.Metric)
				if first == "" && len(r.Warnings) > 0 {
					first = r.Warnings[len(r.Warnings)-1]
				}
			}
		}
	}
	if len(unknown) > 0 {
		msg := "no verdict on gated " + strings.Join(unknown, ", ")
		if first != "" {
			msg += ": " + first
		}
		reasons = append(reasons, msg)
	}
	if len(invalid) > 0 {
		reasons = append(reasons, invalid[0]+" (--allow-invalid to judge it anyway)")
	}
	return strings.Join(reasons, "; ")
}

// chooseWindow is the window length of a stage: cfg.Window when set, else
// the whole seconds that cut the shortest run into about TargetWindows
// windows (at least 1 s), doubled while the gated metrics' windows have a
// lag-1 autocorrelation above MaxLag1 and enough windows remain. It
// returns the length, the shortest run's number of windows and the
// largest lag-1 autocorrelation at that length.
func chooseWindow(s Sides, stage string, metrics []Metric, cfg Config) (w, windows int, rho float64) {
	short := -1
	for _, in := range slices.Concat(s.Base, s.New) {
		sc := scenario(in.Result, stage)
		if sc == nil {
			continue
		}
		u := usable(&sc.Series, span(in.Result, sc, cfg).Skip)
		if short < 0 || u < short {
			short = u
		}
	}
	short = max(short, 0)
	var watched []Metric
	for _, m := range metrics {
		if m.window != nil && slices.Contains(cfg.Gate, m.Name) {
			watched = append(watched, m)
		}
	}
	if len(watched) == 0 {
		for _, m := range metrics {
			if m.window != nil {
				watched = append(watched, m)
			}
		}
	}
	phis := make([]float64, len(watched))
	for i, m := range watched {
		phis[i] = metricLag1(s, stage, m, cfg)
	}
	lagAt := func(w int) float64 {
		worst := 0.0
		for _, phi := range phis {
			worst = math.Max(worst, windowLag1(phi, w))
		}
		return worst
	}
	if cfg.Window > 0 {
		return cfg.Window, short / cfg.Window, lagAt(cfg.Window)
	}
	w = max(1, short/cfg.TargetWindows)
	rho = lagAt(w)
	for rho > cfg.MaxLag1 && short/(2*w) >= cfg.MinWindows {
		w *= 2
		rho = lagAt(w)
	}
	return w, short / w, rho
}

// MetricNames lists the names of Metrics, comma-separated, for help texts
// and errors.
func MetricNames() string {
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
	rep.Replicates = replicates(s)
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
// first base result's order, and, in words, each stage some result has and
// another lacks: a run cut short, or a different plan, whose missing stage
// could have held the regression.
func commonStages(base, nw []Input, rep *Report) (common, missing []string) {
	all := slices.Concat(base, nw)
	seen := map[string]bool{}
	for _, x := range all {
		for _, sc := range x.Result.Scenarios {
			if seen[sc.Name] {
				continue
			}
			seen[sc.Name] = true
			every := true
			for _, in := range all {
				if scenario(in.Result, sc.Name) == nil {
					every = false
					msg := fmt.Sprintf("stage %s is not in %s: not compared", sc.Name, in.Path)
					rep.Warnings = append(rep.Warnings, msg)
					missing = append(missing, msg)
					break
				}
			}
			if every && scenario(base[0].Result, sc.Name) != nil {
				common = append(common, sc.Name)
			}
		}
	}
	return common, missing // in base[0]'s order: its stages were seen first
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

// legacyWarmup says whether r was written before each stage recorded its
// warm-up (load.warmup): its config has one and its first stage does not.
func legacyWarmup(r *result.Result) bool {
	return r.Config.Warmup != "" && len(r.Scenarios) > 0 && r.Scenarios[0].Load.Warmup == ""
}

// span is where windows are cut in a stage's series: after the stage's
// own warm-up and the settling seconds. A result written before stages
// recorded their warm-up has the first stage's only, in its config, and
// had it cut from every stage: so it still is.
func span(r *result.Result, sc *result.Scenario, cfg Config) Span {
	skip := cfg.Settle
	w := sc.Load.Warmup
	if legacyWarmup(r) {
		w = r.Config.Warmup
	}
	if d, err := time.ParseDuration(w); err == nil && d > 0 {
		skip += int(math.Ceil(d.Seconds()))
	}
	return Span{Skip: skip, Window: cfg.Window}
}

// sideWindows are the metric's windows of a stage in each run of a side;
// at an end of the measurement error (cfg.end) each run's windows are
// moved by how far its figures may be off (windowOffsets).
func sideWindows(in []Input, stage string, m Metric, cfg Config, side sideKind) (runs [][]float64, warns []string) {
	for _, x := range in {
		sc := scenario(x.Result, stage)
		if side == sideRef {
			sc = refScenario(x.Result, stage)
		}
		if sc == nil {
			warns = append(warns, fmt.Sprintf("%s has no stage %s", x.Path, stage))
			continue
		}
		sp := span(x.Result, sc, cfg)
		v, empty := Windows(&sc.Series, sp, m)
		if empty > 0 {
			warns = append(warns, fmt.Sprintf("%s: %d empty window(s) skipped", x.Path, empty))
		}
		if cfg.end != nil && side != sideRef {
			lo, hi := windowOffsets(sc, sp, m)
			if d := cfg.end.offset(m, side, lo, hi); d != 0 {
				for i := range v {
					v[i] = clampTo(m, v[i]+d)
				}
			}
		}
		runs = append(runs, v)
	}
	return runs, warns
}

// isAbsolute says whether a metric's change is a difference (fractions,
// figures near zero) rather than a ratio.
func isAbsolute(m Metric) bool { return m.Diff }

// newRow is a row with no verdict yet.
func newRow(m Metric, method string, cfg Config) Row {
	return Row{Metric: m.Name, Unit: m.Unit, Method: method, Absolute: isAbsolute(m), Margin: cfg.margin(m), P: 1, Verdict: Unknown}
}

// windowRow compares pooled windows: Welch's t-test for the p-value and a
// moving-block bootstrap for the interval of the change.
func windowRow(m Metric, stage string, s Sides, cfg Config, rng *rand.Rand) Row {
	row := newRow(m, "welch+block-bootstrap", cfg)
	bruns, w1 := sideWindows(s.Base, stage, m, cfg, sideBase)
	nruns, w2 := sideWindows(s.New, stage, m, cfg, sideNew)
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
		row.Warnings = append(row.Warnings, fmt.Sprintf("need ≥ %d windows of %d s on each side for a verdict, have %d and %d: run longer (≥ %d s of load after warm-up)", cfg.MinWindows, cfg.Window, len(b), len(n), cfg.MinWindows+cfg.Settle+1))
		row.ChangeLo, row.ChangeHi = row.Change, row.Change
		return row
	}
	// Autocorrelated windows carry less information than their number:
	// the variances are inflated by the windows' lag-1 autocorrelation,
	// from the per-second values' (see windowLag1).
	rho := windowLag1(metricLag1(s, stage, m, cfg), cfg.Window)
	if rho > cfg.MaxLag1 {
		row.Warnings = append(row.Warnings, fmt.Sprintf("windows are autocorrelated (lag-1 %.2f): the test allows for it; a longer run or a wider --window gives a firmer verdict", rho))
	}
	w := welchInflated(b, n, cfg.Alpha, inflation(rho), inflation(rho))
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
	significant := w.P < cfg.Alpha && (row.ChangeLo > 0 || row.ChangeHi < 0)
	if w.P < cfg.Alpha && !significant {
		row.Warnings = append(row.Warnings, "Welch's test and the block bootstrap disagree: called no change")
	}
	judge(&row, m, significant)
	// Several runs a side, fewer than the U test needs: the pooled windows
	// hold no run-to-run variance, so a change stands only when every run
	// of the new side lies beyond every run of the base in its direction.
	if (len(bruns) > 1 || len(nruns) > 1) && (row.Verdict == Regressed || row.Verdict == Improved) {
		bm, nm := runMeans(bruns), runMeans(nruns)
		if up := row.Change > 0; (up && slices.Min(nm) <= slices.Max(bm)) || (!up && slices.Max(nm) >= slices.Min(bm)) {
			row.Verdict = Unknown
			row.Warnings = append(row.Warnings, fmt.Sprintf("the runs overlap (run means %s base, %s new): pooled windows hold no run-to-run variance; a verdict needs ≥ %d runs a side, or runs that do not overlap", fmtMeans(bm), fmtMeans(nm), cfg.MinRuns))
		}
	}
	return row
}

// runMeans are the means of each run's windows (runs without any left out).
func runMeans(runs [][]float64) []float64 {
	var out []float64
	for _, r := range runs {
		if len(r) > 0 {
			out = append(out, mean(r))
		}
	}
	return out
}

func fmtMeans(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.4g", x)
	}
	return strings.Join(parts, ", ")
}

// runsRow compares the runs' whole-stage figures with a Mann-Whitney U
// test; each side's figure is the median of its runs with a 95 % interval
// (benchmath's distribution-free summary).
func runsRow(m Metric, stage string, s Sides, cfg Config, rng *rand.Rand) Row {
	row := newRow(m, "mann-whitney", cfg)
	infinite := 0
	collect := func(in []Input, side sideKind) []float64 {
		var v []float64
		for _, x := range in {
			if sc := scenario(x.Result, stage); sc != nil {
				if f, ok := m.run(sc); ok && finite(f) {
					if cfg.end != nil {
						lo, hi := runOffsets(sc, m)
						f = clampTo(m, f+cfg.end.offset(m, side, lo, hi))
					}
					v = append(v, f)
				} else if ok {
					infinite++
				}
			}
		}
		return v
	}
	b, n := collect(s.Base, sideBase), collect(s.New, sideNew)
	row.NBase, row.NNew = len(b), len(n)
	if infinite > 0 {
		// A recovery that never came is +Inf: leaving its run out would
		// judge the runs that recovered only.
		row.Method = "none"
		row.Warnings = append(row.Warnings, fmt.Sprintf("%d run(s) have no finite %s (a recovery that never came): no verdict", infinite, m.Name))
		return row
	}
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
		why := "has one value a run"
		if m.window != nil {
			why = "has no per-second series in every result (written by an older spate)"
		}
		row.Warnings = append(row.Warnings, fmt.Sprintf("%s %s: a verdict needs ≥ %d runs per side, have %d and %d", m.Name, why, cfg.MinRuns, len(b), len(n)))
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
	judge(&row, m, c.P < cfg.Alpha)
	return row
}

// normalisedRow compares NEW scaled by the reference ratio with BASE:
// change = (new/newRef)/(base/baseRef) − 1, its interval and p-value from
// a moving-block bootstrap of all four, so the references' noise widens
// the interval.
func normalisedRow(m Metric, stage string, s Sides, cfg Config, rng *rand.Rand) Row {
	row := newRow(m, "ref-normalised block-bootstrap", cfg)
	if m.window == nil || row.Absolute {
		row = windowOrRuns(m, stage, s, cfg, rng)
		row.Warnings = append(row.Warnings, "not normalised: only latencies and rates are scaled by the reference")
		return row
	}
	var warns []string
	side := func(in []Input, k sideKind) [][]float64 {
		r, w := sideWindows(in, stage, m, cfg, k)
		warns = append(warns, w...)
		return r
	}
	b, n, br, nr := side(s.Base, sideBase), side(s.New, sideNew), side(s.BaseRef, sideRef), side(s.NewRef, sideRef)
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
	// The bootstrap p-value is at least 2/(resamples + 1): enough
	// resamples that it can reach Holm's first threshold, α over the
	// gated rows, with room to spare.
	resamples := max(cfg.Resamples, int(math.Ceil(4*float64(cfg.family)/cfg.Alpha)))
	boots := make([]float64, 0, resamples)
	ratios := make([]float64, 0, resamples)
	for range resamples {
		bm, nm, brm, nrm := rb.mean(rng), rn.mean(rng), rbr.mean(rng), rnr.mean(rng)
		x := (nm / nrm) / (bm / brm)
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			boots = append(boots, x-1)
			ratios = append(ratios, nrm/brm)
		}
	}
	if len(boots) < resamples/2 {
		row.Warnings = append(row.Warnings, "a reference or the base is zero: no normalised change")
		return row
	}
	lo, hi, p := percentileCI(boots, cfg.Alpha)
	row.ChangeLo, row.ChangeHi, row.P = lo, hi, p
	rlo, rhi, _ := percentileCI(ratios, cfg.Alpha)
	row.RefRatio = &Value{Center: ratio, Lo: &rlo, Hi: &rhi}
	judge(&row, m, lo > 0 || hi < 0)
	return row
}

// windowOrRuns is the row of a metric that is not normalised.
func windowOrRuns(m Metric, stage string, s Sides, cfg Config, rng *rand.Rand) Row {
	if m.window == nil {
		return runsRow(m, stage, s, cfg, rng)
	}
	return windowRow(m, stage, s, cfg, rng)
}

// judge sets a row's verdict: a change is called only when it is
// significant and larger than the row's margin; a significant change
// within the margin is "~" with a warning saying so.
func judge(row *Row, m Metric, significant bool) {
	row.Verdict = verdict(m, row.Change, significant && math.Abs(row.Change) > row.Margin)
	if significant && row.Change != 0 && row.Verdict == Same {
		row.Warnings = append(row.Warnings, fmt.Sprintf("significant, but within the margin of %s (--min-effect)", marginText(row.Margin, row.Absolute, row.Unit)))
	}
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
