package compare

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/spate-dev/spate/internal/longtest"
)

func row(t *testing.T, rep *Report, stage, metric string) Row {
	t.Helper()
	for _, st := range rep.Stages {
		if st.Name != stage {
			continue
		}
		for _, r := range st.Rows {
			if r.Metric == metric {
				return r
			}
		}
	}
	t.Fatalf("no row %s/%s", stage, metric)
	return Row{}
}

// trials runs compare(i) for i in [0, n) on every CPU (each trial is
// pure computation on its own seeds) and returns the reports in order.
func trials(t *testing.T, n int, compare func(i int) (*Report, error)) []*Report {
	t.Helper()
	reps, errs := make([]*Report, n), make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				reps[i], errs[i] = compare(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return reps
}

// TestSameConfigurationNoChange is the test of the test: pairs of runs
// drawn from the same model must give "~" on every gated metric in at
// least 95 % of trials, and each metric's false-alarm rate must stay near
// α (at most 4 %). The default suite runs 150 trials: at α = 1 % a metric
// has 1.5 false alarms expected and goes over 6 with a chance of 0.08 %,
// while one alarming at 6 % goes over in 80 % of suites; -tags integration
// runs 300 (0.001 %; 92 %). Trials run on every CPU.
func TestSameConfigurationNoChange(t *testing.T) {
	n := 150
	if longtest.On {
		n = 300
	}
	reps := trials(t, n, func(i int) (*Report, error) {
		b := baseModel.result(uint64(2*i+1), "v1")
		nw := baseModel.result(uint64(2*i+2), "v1")
		return Compare(Sides{Base: []Input{{"b", b}}, New: []Input{{"n", nw}}}, Config{Seed: uint64(i + 1), Resamples: 1000})
	})
	quiet := 0
	alarms := map[string]int{}
	for _, rep := range reps {
		if len(rep.Regressed) == 0 {
			quiet++
		}
		for _, r := range rep.Stages[0].Rows {
			if r.Verdict != Same && r.Verdict != Unknown {
				alarms[r.Metric]++
			}
		}
	}
	frac := float64(quiet) / float64(n)
	t.Logf("no gated regression in %d/%d trials (%.1f %%); alarms per metric: %v", quiet, n, 100*frac, alarms)
	if frac < 0.95 {
		t.Errorf("no-change trials %.3f < 0.95", frac)
	}
	for m, k := range alarms {
		// α = 1 % per metric; allow up to 4 % for the autocorrelation the
		// blocks do not fully absorb.
		if float64(k)/float64(n) > 0.04 {
			t.Errorf("%s: %d/%d false alarms", m, k, n)
		}
	}
}

// TestPlantedRegression plants 5 % and 10 % rises in the p99 columns and
// checks they are found at α = 0.01 in nearly every trial, with the
// interval covering the planted change. The margins are off and E2E p99
// is the only gated row (no Holm–Bonferroni family to share α with): this
// is the power of one row's test (TestMargins checks the margins, gate_test.go
// the default gate's family). Trials run on every CPU.
func TestPlantedRegression(t *testing.T) {
	noMargin := map[string]float64{"e2e_p99_ms": 0, "ttft_p99_ms": 0}
	for _, planted := range []float64{0.05, 0.10} {
		const n = 50
		reps := trials(t, n, func(i int) (*Report, error) {
			m := baseModel
			b := m.result(uint64(1000+2*i), "v1")
			m.P99Factor = 1 + planted
			nw := m.result(uint64(1001+2*i), "v2")
			return Compare(Sides{Base: []Input{{"b", b}}, New: []Input{{"n", nw}}}, Config{Seed: uint64(i + 1), Resamples: 1000, MinEffect: noMargin, Gate: []string{"e2e_p99_ms"}})
		})
		found, covered := 0, 0
		for i, rep := range reps {
			r := row(t, rep, "main", "e2e_p99_ms")
			if r.Verdict == Regressed && len(rep.Regressed) > 0 {
				found++
			}
			if r.ChangeLo <= planted && planted <= r.ChangeHi {
				covered++
			}
			if p50 := row(t, rep, "main", "e2e_p50_ms"); p50.Verdict == Regressed {
				// p50 was not changed: allowed only as a rare false alarm.
				t.Logf("trial %d: p50 false alarm (change %+.3f, p %.3g)", i, p50.Change, p50.P)
			}
		}
		t.Logf("planted %+.0f %%: found %d/%d, interval covered it %d/%d", 100*planted, found, n, covered, n)
		if found < n*95/100 {
			t.Errorf("planted %+.0f %%: found in %d/%d trials, want ≥ 95 %%", 100*planted, found, n)
		}
		if covered < n*85/100 {
			t.Errorf("planted %+.0f %%: 99 %% interval covered the planted change in %d/%d trials", 100*planted, covered, n)
		}
	}
}

func TestWelchKnownValues(t *testing.T) {
	// R: t.test(c(2,4,6,8,10), c(1,2,3,4,5)) → t = 1.8974, df = 5.8824,
	// p-value = 0.1075; 95 % CI of the difference −0.9 to 6.9 (approx).
	w := welchTest([]float64{1, 2, 3, 4, 5}, []float64{2, 4, 6, 8, 10}, 0.05)
	if math.Abs(w.Diff-3) > 1e-12 || math.Abs(w.DF-5.8824) > 1e-3 {
		t.Errorf("diff %v df %v, want 3 and 5.8824", w.Diff, w.DF)
	}
	if math.Abs(w.P-0.1075) > 1e-3 {
		t.Errorf("p = %.4f, want 0.1075", w.P)
	}
	if math.Abs((w.Hi-w.Lo)/2-3/1.8974*2.4689) > 0.02 {
		t.Errorf("interval [%v, %v]: half-width off", w.Lo, w.Hi)
	}
}

func TestMinRunsFor(t *testing.T) {
	for _, c := range []struct {
		alpha float64
		want  int
	}{{0.01, 5}, {0.05, 4}, {0.001, 7}} {
		if got := MinRunsFor(c.alpha); got != c.want {
			t.Errorf("MinRunsFor(%v) = %d, want %d", c.alpha, got, c.want)
		}
	}
}

func TestWindows(t *testing.T) {
	m := baseModel
	m.Secs, m.Noise = 23, 0
	r := m.result(1, "v")
	s := &r.Scenarios[0].Series
	tput, _ := MetricByName("throughput_rps")
	// 23 full seconds then a partial one; skip 2, windows of 5: [2,7) …
	// [17,22), four windows.
	v, empty := Windows(s, Span{Skip: 2, Window: 5}, tput)
	if len(v) != 4 || empty != 0 {
		t.Fatalf("windows %v (empty %d), want 4", v, empty)
	}
	ok := 0
	for i := 7; i < 12; i++ {
		ok += s.CompletedPerS[i] - s.ErrorsPerS[i]
	}
	if v[1] != float64(ok)/5 {
		t.Errorf("window 1 = %v, want %v", v[1], float64(ok)/5)
	}
	p99, _ := MetricByName("e2e_p99_ms")
	// An empty window is skipped.
	for i := 2; i < 7; i++ {
		s.CompletedPerS[i], s.ErrorsPerS[i] = 0, 0
	}
	v, empty = Windows(s, Span{Skip: 2, Window: 5}, p99)
	if len(v) != 3 || empty != 1 || v[0] != 1600 {
		t.Errorf("p99 windows %v empty %d, want 3 windows of 1600 and 1 empty", v, empty)
	}
}

func TestFingerprintRefused(t *testing.T) {
	b := baseModel.result(1, "v1")
	n := baseModel.result(2, "v2")
	n.Provenance.Model = "other"
	n.Config.Rate = 40
	_, err := Compare(Sides{Base: []Input{{"b.json", b}}, New: []Input{{"n.json", n}}}, Config{})
	var me *MismatchError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v, want a MismatchError", err)
	}
	msg := err.Error()
	for _, want := range []string{"provenance.model: m ≠ other", "config.rate: 20 ≠ 40", "--force"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "sut_version") {
		t.Errorf("the SUT version may differ across sides: %q", msg)
	}
	rep, err := Compare(Sides{Base: []Input{{"b.json", b}}, New: []Input{{"n.json", n}}}, Config{Force: true})
	if err != nil || len(rep.Differences) != 2 || rep.SUTVersions != "v1 → v2" {
		t.Errorf("forced: %v, differences %v, sut %q", err, rep.Differences, rep.SUTVersions)
	}
	// Within a side the SUT version must agree.
	b2 := baseModel.result(3, "v9")
	if _, err := Compare(Sides{Base: []Input{{"b.json", b}, {"b2.json", b2}}, New: []Input{{"n.json", baseModel.result(4, "v1")}}}, Config{}); err == nil || !strings.Contains(err.Error(), "sut_version") {
		t.Errorf("within-side SUT difference: err = %v", err)
	}
}

// TestMargins: a significant change within its margin is "~" with a
// warning naming the margin; beyond it, regressed; the margin is the
// default (5 % for latencies) or --min-effect's.
func TestMargins(t *testing.T) {
	for _, c := range []struct {
		name    string
		planted float64
		effect  map[string]float64
		want    string
	}{
		{"3 % within the default 5 %", 0.03, nil, Same},
		{"10 % beyond the default 5 %", 0.10, nil, Regressed},
		{"10 % within a 15 % margin", 0.10, map[string]float64{"e2e_p99_ms": 0.15}, Same},
		{"3 % with no margin", 0.03, map[string]float64{"e2e_p99_ms": 0}, Regressed},
	} {
		m := baseModel
		m.Noise = 0.005
		b := m.result(11, "v1")
		m.P99Factor = 1 + c.planted
		n := m.result(12, "v2")
		rep, err := Compare(Sides{Base: []Input{{"b", b}}, New: []Input{{"n", n}}}, Config{Resamples: 500, MinEffect: c.effect})
		if err != nil {
			t.Fatal(err)
		}
		r := row(t, rep, "main", "e2e_p99_ms")
		if r.Verdict != c.want || r.P >= 0.01 {
			t.Errorf("%s: %s (change %+.3f, p %.3g, margin %v), want %s", c.name, r.Verdict, r.Change, r.P, r.Margin, c.want)
		}
		within := strings.Contains(strings.Join(r.Warnings, ";"), "within the margin")
		if within != (c.want == Same) {
			t.Errorf("%s: warnings %v", c.name, r.Warnings)
		}
	}
	if _, err := ParseMinEffect([]string{"e2e_p99_ms=10"}); err == nil || !strings.Contains(err.Error(), "percentage") {
		t.Errorf("a bare number for a relative metric: %v", err)
	}
	got, err := ParseMinEffect([]string{"e2e_p99_ms=10%,error_rate=0.5pp", "resilience_slope=0.82", "msr=0"})
	if err != nil || got["e2e_p99_ms"] != 0.1 || got["error_rate"] != 0.005 || got["resilience_slope"] != 0.82 || got["msr"] != 0 {
		t.Errorf("ParseMinEffect: %v %v", got, err)
	}
	for _, bad := range []string{"nope=1%", "error_rate=1%", "e2e_p99_ms", "e2e_p99_ms=-1%"} {
		if _, err := ParseMinEffect([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
