package compare

import (
	"errors"
	"strings"
	"testing"
)

// TestShortRunsGetVerdicts: runs of 10 s get a verdict on every gated
// metric at the default settings (windows chosen from their length), and
// runs too short for any say so: inconclusive, naming what is missing.
func TestShortRunsGetVerdicts(t *testing.T) {
	m := baseModel
	m.Secs, m.Noise = 10, 0.02
	for _, c := range []struct {
		name    string
		planted float64
		want    string
	}{{"no change", 0, Same}, {"+20 %", 0.20, Regressed}} {
		b := m.result(21, "v1")
		nm := m
		nm.P99Factor = 1 + c.planted
		n := nm.result(22, "v2")
		rep, err := Compare(Sides{Base: []Input{{"b", b}}, New: []Input{{"n", n}}}, Config{})
		if err != nil {
			t.Fatal(err)
		}
		st := rep.Stages[0]
		if st.WindowS != 1 || st.Windows < DefaultMinWindows {
			t.Errorf("%s: %d windows of %d s", c.name, st.Windows, st.WindowS)
		}
		for _, r := range st.Rows {
			if r.Gated && r.Verdict == Unknown {
				t.Errorf("%s: %s got no verdict: %v", c.name, r.Metric, r.Warnings)
			}
		}
		if r := row(t, rep, "main", "e2e_p99_ms"); r.Verdict != c.want {
			t.Errorf("%s: e2e_p99 %s (%+.3f, p %.3g), want %s", c.name, r.Verdict, r.Change, r.P, c.want)
		}
		if rep.Inconclusive != "" {
			t.Errorf("%s: inconclusive %q", c.name, rep.Inconclusive)
		}
	}
	m.Secs = 5
	rep, err := Compare(Sides{Base: []Input{{"b", m.result(1, "v1")}}, New: []Input{{"n", m.result(2, "v1")}}}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Inconclusive, "no verdict on gated main/ttft_p50_ms, main/ttft_p99_ms") || !strings.Contains(rep.Inconclusive, "run longer") {
		t.Errorf("5 s runs: inconclusive %q", rep.Inconclusive)
	}
}

// TestWindowWidenedForAutocorrelation: strongly autocorrelated seconds
// widen the automatic window until its windows are nearly independent.
func TestWindowWidenedForAutocorrelation(t *testing.T) {
	m := baseModel
	m.Phi = 0.9
	rep, err := Compare(Sides{Base: []Input{{"b", m.result(1, "v1")}}, New: []Input{{"n", m.result(2, "v1")}}}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	st := rep.Stages[0]
	// 119 usable seconds aim for windows of 5 s; φ ≈ 0.9 doubles them.
	if st.WindowS <= 5 || st.Windows < DefaultMinWindows {
		t.Errorf("window %d s (%d windows, lag-1 %.2f), want wider than 5 s", st.WindowS, st.Windows, st.Lag1)
	}
	if windowLag1(0, 4) != 0 || windowLag1(0.5, 1) != 0.5 || windowLag1(0.5, 4) > windowLag1(0.5, 2) {
		t.Error("windowLag1 does not fall with the window")
	}
}

// TestReplicates: runs that differ in their seed only compare; the
// refusal names what differs otherwise.
func TestReplicates(t *testing.T) {
	mk := func(seed uint64, digest, spec string) *Input {
		r := baseModel.result(seed, "v1")
		r.Config.Seed = seed
		r.Provenance.WorkloadSHA256, r.Provenance.WorkloadSpecSHA256 = digest, spec
		return &Input{Path: "run.json", Result: r}
	}
	ok := func(in ...*Input) Sides {
		s := Sides{Base: []Input{*in[0]}, New: []Input{*in[1]}}
		for _, x := range in[2:] {
			s.New = append(s.New, *x)
		}
		return s
	}
	rep, err := Compare(ok(mk(1, "aaa", "spec"), mk(2, "bbb", "spec"), mk(3, "ccc", "spec")), Config{Resamples: 100})
	if err != nil || !strings.Contains(rep.Replicates, "seeds 1 (base) · 2, 3 (new)") {
		t.Fatalf("replicates: %v %q", err, rep.Replicates)
	}
	for _, c := range []struct {
		name string
		a, b *Input
		want string
	}{
		{"workload differs beyond the seed", mk(1, "aaa", "spec1"), mk(2, "bbb", "spec2"), "provenance.workload_spec_sha256: spec1 ≠ spec2 (the workloads differ beyond their seeds)"},
		{"same seed, other workload", mk(1, "aaa", "spec"), mk(1, "bbb", "spec"), "provenance.workload_sha256: aaa ≠ bbb"},
		{"an older result", mk(1, "aaa", ""), mk(2, "bbb", "spec"), "older spate"},
	} {
		_, err := Compare(ok(c.a, c.b), Config{Resamples: 100})
		var me *MismatchError
		if !errors.As(err, &me) || len(me.Diffs) != 1 || !strings.Contains(me.Diffs[0], c.want) || strings.Contains(err.Error(), "seed:") {
			t.Errorf("%s: %v, want one difference naming %q", c.name, err, c.want)
		}
	}
}

// TestInvalidStageInconclusive: a stage that was not a valid measurement
// makes a comparison with no regression inconclusive, unless allowed; a
// regression still wins.
func TestInvalidStageInconclusive(t *testing.T) {
	m := baseModel
	m.Noise = 0.01
	b, n := m.result(1, "v1"), m.result(2, "v1")
	n.Scenarios[0].Load.Valid, n.Scenarios[0].Load.InvalidReason = false, "schedule lag p99 40 ms exceeds 10 ms"
	s := Sides{Base: []Input{{"b.json", b}}, New: []Input{{"n.json", n}}}
	rep, err := Compare(s, Config{Resamples: 100})
	if err != nil || !strings.Contains(rep.Inconclusive, "n.json: stage main is not a valid measurement: schedule lag") || !strings.Contains(rep.Inconclusive, "--allow-invalid") {
		t.Errorf("invalid stage: %v %q", err, rep.Inconclusive)
	}
	if rep, _ := Compare(s, Config{Resamples: 100, AllowInvalid: true}); rep.Inconclusive != "" {
		t.Errorf("--allow-invalid: %q", rep.Inconclusive)
	}
	// Nothing gated (--gate none): a report, with no verdict to doubt.
	if rep, _ := Compare(s, Config{Resamples: 100, Gate: []string{}}); rep.Inconclusive != "" {
		t.Errorf("--gate none: %q", rep.Inconclusive)
	}
	m.P99Factor = 1.3
	n2 := m.result(2, "v1")
	n2.Scenarios[0].Load.Valid = false
	rep, _ = Compare(Sides{Base: []Input{{"b.json", b}}, New: []Input{{"n.json", n2}}}, Config{Resamples: 100})
	if len(rep.Regressed) == 0 || rep.Inconclusive != "" {
		t.Errorf("a regression on an invalid stage: regressed %v, inconclusive %q", rep.Regressed, rep.Inconclusive)
	}
}
