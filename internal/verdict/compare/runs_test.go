package compare

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/spate-dev/spate/result"
)

func runs(m model, n int, seed uint64, sut string) []Input {
	var in []Input
	for i := range n {
		in = append(in, Input{fmt.Sprintf("%s-%d.json", sut, i), m.result(seed+uint64(i), sut)})
	}
	return in
}

// TestRepeatedRuns: enough runs a side switch to the Mann-Whitney U test
// on whole-run figures, with a median and interval per side: as many as
// it needs to reach Holm's first threshold, α over the gated rows (five
// a side with one gated metric, seven with the default gate's ten rows).
func TestRepeatedRuns(t *testing.T) {
	m := baseModel
	m.Secs = 30
	base := runs(m, 7, 100, "v1")
	m.P99Factor = 1.10
	nw := runs(m, 7, 200, "v2")
	one := []string{"e2e_p99_ms"}
	rep, err := Compare(Sides{Base: base[:6], New: nw[:6]}, Config{Seed: 1, Gate: one})
	if err != nil {
		t.Fatal(err)
	}
	r := row(t, rep, "main", "e2e_p99_ms")
	if r.Method != "mann-whitney" || r.NBase != 6 || r.NNew != 6 {
		t.Fatalf("row %+v: want mann-whitney on 6 runs a side", r)
	}
	// Complete separation of 6 and 6: p = 2/C(12,6) = 2/924.
	if r.Verdict != Regressed || math.Abs(r.P-2.0/924) > 1e-9 {
		t.Errorf("e2e_p99: verdict %s p %.5f, want regressed at p=%.5f", r.Verdict, r.P, 2.0/924)
	}
	if r.Base.Lo == nil || *r.Base.Lo > r.Base.Center || *r.Base.Hi < r.Base.Center || math.Abs(r.Base.Center/1600-1) > 0.03 {
		t.Errorf("base summary %+v: want a median near 1600 ms inside its interval", r.Base)
	}
	if math.Abs(r.Change-0.10) > 0.03 || r.ChangeLo > 0.10 || r.ChangeHi < 0.10 {
		t.Errorf("change %.3f [%.3f, %.3f], want ≈ +10 %% inside", r.Change, r.ChangeLo, r.ChangeHi)
	}
	if g := row(t, rep, "main", "goodput"); g.Method != "mann-whitney" || g.Verdict == Unknown {
		t.Errorf("goodput row %+v: want a verdict from repeated runs", g)
	}
	if p50 := row(t, rep, "main", "e2e_p50_ms"); p50.Verdict != Same {
		t.Errorf("e2e_p50 unchanged, verdict %s (p %.3g)", p50.Verdict, p50.P)
	}
	// Five runs a side reach α = 0.01 but give no 95 % interval of a
	// median, and say so.
	rep, err = Compare(Sides{Base: base[:5], New: nw[:5]}, Config{Seed: 1, Gate: one})
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, rep, "main", "e2e_p99_ms"); r.Method != "mann-whitney" || r.Verdict != Regressed || r.Base.Lo != nil || len(r.Warnings) == 0 {
		t.Errorf("5 runs a side: %+v, want mann-whitney, regressed, no interval and a warning", r)
	}
	// With the default gate the U test's smallest p-value must be under
	// α over the gated rows: seven runs a side reach it (2/C(14,7) = 2/3432), and the three
	// planted p99 rows are regressed in the family.
	rep, err = Compare(Sides{Base: base, New: nw}, Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The model has no TPOT columns: eight gated rows.
	if r := row(t, rep, "main", "e2e_p99_ms"); rep.Family != 8 || r.Method != "mann-whitney" || r.Verdict != Regressed || r.PHolm == nil || math.Abs(*r.PHolm-8*2.0/3432) > 1e-9 {
		t.Errorf("7 runs a side, default gate: family %d, %s %s p_holm %v, want 8, mann-whitney, regressed at 8·2/3432", rep.Family, r.Method, r.Verdict, r.PHolm)
	}
	// Six a side cannot (2/924 > α/8): pooled windows are used.
	rep, err = Compare(Sides{Base: base[:6], New: nw[:6]}, Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, rep, "main", "e2e_p99_ms"); r.Method != "welch+block-bootstrap" || r.Verdict != Regressed {
		t.Errorf("6 runs a side, default gate: %s %s, want welch+block-bootstrap regressed", r.Method, r.Verdict)
	}
	// Four runs a side cannot reach α = 0.01: pooled windows are used.
	rep, err = Compare(Sides{Base: base[:4], New: nw[:4]}, Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, rep, "main", "e2e_p99_ms"); r.Method != "welch+block-bootstrap" || r.Verdict != Regressed {
		t.Errorf("4 runs a side: %s %s, want welch+block-bootstrap regressed", r.Method, r.Verdict)
	}
	// Goodput has a per-second series (good_per_s): windows too.
	if g := row(t, rep, "main", "goodput"); g.Method != "welch+block-bootstrap" || g.Verdict != Same {
		t.Errorf("goodput with 4 runs a side: %s %s %v, want ~ from windows", g.Method, g.Verdict, g.Warnings)
	}
	// A result of an older spate has no good_per_s: its goodput is
	// compared whole, and one run a side gives no verdict, saying why.
	old := base[0].Result
	old.Scenarios[0].Series.GoodPerS = nil
	rep, err = Compare(Sides{Base: base[:1], New: nw[:1]}, Config{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if g := row(t, rep, "main", "goodput"); g.Verdict != Unknown || !strings.Contains(strings.Join(g.Warnings, ";"), "older spate") {
		t.Errorf("goodput without good_per_s: %s %v, want ? saying why", g.Verdict, g.Warnings)
	}
}

// TestNormalised: environment B is 30 % slower at everything; a reference
// workload run in both says so, and NEW scaled by it shows no change, or
// the planted one.
func TestNormalised(t *testing.T) {
	a := baseModel
	b := baseModel
	b.TTFTms, b.E2Ems = 1.3*a.TTFTms, 1.3*a.E2Ems
	ref := func(m model, seed uint64) []Input {
		m.TTFTms, m.E2Ems = m.TTFTms/2, m.E2Ems/2 // a different, lighter workload
		return []Input{{fmt.Sprintf("ref-%d.json", seed), m.result(seed, "ref")}}
	}
	for _, c := range []struct {
		planted float64
		want    string
	}{{0, Same}, {0.10, Regressed}} {
		nb := b
		nb.P99Factor = 1 + c.planted
		s := Sides{Base: []Input{{"a.json", a.result(1, "v1")}}, New: []Input{{"b.json", nb.result(2, "v1")}},
			BaseRef: ref(a, 3), NewRef: ref(b, 4)}
		rep, err := Compare(s, Config{Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		r := row(t, rep, "main", "e2e_p99_ms")
		t.Logf("planted %+.0f %%: change %+.3f [%+.3f, %+.3f] p %.3g ratio %.3f", 100*c.planted, r.Change, r.ChangeLo, r.ChangeHi, r.P, r.RefRatio.Center)
		if r.Method != "ref-normalised block-bootstrap" || r.Verdict != c.want {
			t.Errorf("planted %v: %s %s, want %s", c.planted, r.Method, r.Verdict, c.want)
		}
		if r.ChangeLo > c.planted || r.ChangeHi < c.planted {
			t.Errorf("planted %v: interval [%v, %v] misses it", c.planted, r.ChangeLo, r.ChangeHi)
		}
		if r.RefRatio == nil || math.Abs(r.RefRatio.Center-1.3) > 0.03 || *r.RefRatio.Lo > 1.3 || *r.RefRatio.Hi < 1.3 {
			t.Errorf("ref ratio %+v, want ≈ 1.3 inside its interval", r.RefRatio)
		}
		// Throughput is the same in both environments and is not scaled
		// away: its ref ratio is ≈ 1.
		if tp := row(t, rep, "main", "throughput_rps"); tp.Verdict != Same {
			t.Errorf("throughput: %s", tp.Verdict)
		}
	}
	// Without the references the environment's 30 % shows as a regression.
	rep, err := Compare(Sides{Base: []Input{{"a.json", a.result(1, "v1")}}, New: []Input{{"b.json", b.result(2, "v1")}}}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if r := row(t, rep, "main", "e2e_p99_ms"); r.Verdict != Regressed || math.Abs(r.Change-0.3) > 0.05 {
		t.Errorf("unnormalised: %s %+.3f, want regressed ≈ +30 %%", r.Verdict, r.Change)
	}
}

// TestCapacityCompared: capacity searches are compared on their capacity;
// six searches a side give a U-test verdict and medians with intervals.
func TestCapacityCompared(t *testing.T) {
	search := func(path string, rate float64) Input {
		r := baseModel.result(1, "v1")
		r.Capacity = &result.Capacity{RateRPS: rate, LowRPS: rate, HighRPS: rate * 1.05}
		return Input{path, r}
	}
	var base, nw []Input
	for i := range 6 {
		base = append(base, search(fmt.Sprintf("b%d", i), 10+0.1*float64(i)))
		nw = append(nw, search(fmt.Sprintf("n%d", i), 9+0.1*float64(i)))
	}
	rep, err := Compare(Sides{Base: base, New: nw}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Stages) != 1 || rep.Stages[0].Name != "capacity" || len(rep.Regressed) != 1 {
		t.Fatalf("stages %+v regressed %v", rep.Stages, rep.Regressed)
	}
	r := rep.Stages[0].Rows[0]
	// Medians 10.25 and 9.25: −9.76 %; complete separation, p = 2/924.
	if r.Verdict != Regressed || math.Abs(r.Change-(9.25/10.25-1)) > 1e-9 || math.Abs(r.P-2.0/924) > 1e-9 || r.Base.Lo == nil {
		t.Errorf("row %+v", r)
	}
	// One search a side: its bracket, no verdict.
	rep, err = Compare(Sides{Base: base[:1], New: nw[:1]}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Stages[0].Rows[0]; r.Verdict != Unknown || r.Method != "search bracket" || *r.Base.Hi != 10.5 {
		t.Errorf("single search row %+v", r)
	}
}
