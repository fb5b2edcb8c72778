package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/verdict/resilience"
	"github.com/spate-dev/spate/result"
)

// TestNoSilentPass: each case is a comparison whose data cannot support "no
// gated metric regressed"; each must come out inconclusive (exit 4) or as
// an error, never as a pass. The new run of every case is invalid or worse,
// so a comparison that judged anything here would have to say so.
func TestNoSilentPass(t *testing.T) {
	m := baseModel
	m.Noise = 0.01
	pair := func() (*result.Result, *result.Result) { return m.result(1, "v1"), m.result(2, "v1") }
	invalidNew := func() Sides {
		b, n := pair()
		n.Scenarios[0].Load.Valid, n.Scenarios[0].Load.InvalidReason = false, "schedule lag p99 40 ms exceeds 10 ms"
		return Sides{Base: []Input{{"b.json", b}}, New: []Input{{"n.json", n}}}
	}
	for _, tc := range []struct {
		name string
		s    func() Sides
		cfg  Config
		want string // in Inconclusive, or in the error
	}{
		// --metric left the gated metrics out; the invalid run went unseen.
		{"--metric hides the gate", invalidNew, Config{Metrics: []string{"e2e_p50_ms"}}, "n.json: stage main is not a valid measurement"},
		// A gate named on a figure neither side has.
		{"gated figure absent", func() Sides {
			b, n := pair()
			for _, r := range []*result.Result{b, n} {
				s := &r.Scenarios[0].Series
				s.ITLp50ms, s.ITLp99ms, s.ITLMeanMS = nil, nil, nil
				delete(r.Scenarios[0].Metrics, "itl_ms")
			}
			return Sides{Base: []Input{{"b.json", b}}, New: []Input{{"n.json", n}}}
		}, Config{Gate: []string{"itl_p99_ms"}}, "no verdict on gated main/itl_p99_ms: neither side has this figure"},
		// The new run lacks the base's second stage (a run cut short, or
		// another plan): the stage it lacks could hold the regression.
		{"a stage missing", func() Sides {
			b, n := pair()
			peak := b.Scenarios[0]
			peak.Name = "peak"
			b.Scenarios = append(b.Scenarios, peak)
			return Sides{Base: []Input{{"b.json", b}}, New: []Input{{"n.json", n}}}
		}, Config{}, "stage peak is not in n.json"},
		// A stage only the new run has is as much not compared.
		{"a stage only new has", func() Sides {
			b, n := pair()
			peak := n.Scenarios[0]
			peak.Name = "peak"
			n.Scenarios = append(n.Scenarios, peak)
			return Sides{Base: []Input{{"b.json", b}}, New: []Input{{"n.json", n}}}
		}, Config{}, "stage peak is not in b.json"},
		{"aborted", func() Sides {
			b, n := pair()
			n.Aborted = "stage main: error_rate < 5% failed"
			return Sides{Base: []Input{{"b.json", b}}, New: []Input{{"n.json", n}}}
		}, Config{}, "n.json: the run was aborted"},
		// The results' config holds the first stage's load only: a
		// second stage sent at half the rate was "improved".
		{"a stage sent another load", func() Sides {
			b, n := pair()
			for _, x := range []struct {
				r    *result.Result
				rate float64
			}{{b, 20}, {n, 10}} {
				peak := x.r.Scenarios[0]
				peak.Name, peak.Load.TargetRate = "peak", x.rate
				x.r.Scenarios = append(x.r.Scenarios, peak)
			}
			return Sides{Base: []Input{{"b.json", b}}, New: []Input{{"n.json", n}}}
		}, Config{}, "scenarios[peak].load.target_rate: 20 ≠ 10"},
		// Windows end at the last send: 300 requests the new server hung
		// until they timed out, 2 s after it, fell outside all of them
		// (error_rate 0.00 → 0.00, "~").
		{"failures in the drain", func() Sides {
			b, n := pair()
			s := &n.Scenarios[0].Series
			for range 2 {
				s.SentPerS = append(s.SentPerS, 0)
				s.CompletedPerS = append(s.CompletedPerS, 150)
				s.ErrorsPerS = append(s.ErrorsPerS, 150)
			}
			return Sides{Base: []Input{{"b.json", b}}, New: []Input{{"n.json", n}}}
		}, Config{}, "n.json: stage main: 300 requests failed after its last send"},
		{"interrupted", func() Sides {
			b, n := pair()
			n.Interrupted = true
			return Sides{Base: []Input{{"b.json", b}}, New: []Input{{"n.json", n}}}
		}, Config{}, "n.json: the run was interrupted"},
		// The new side's reference run, under another stage name (its
		// only stage is used), is invalid.
		{"invalid reference run", func() Sides {
			b, n := pair()
			br, nr := m.result(3, "v1"), m.result(4, "v1")
			nr.Scenarios[0].Name = "ref"
			nr.Scenarios[0].Load.Valid, nr.Scenarios[0].Load.InvalidReason = false, "missed sends"
			return Sides{Base: []Input{{"b.json", b}}, New: []Input{{"n.json", n}}, BaseRef: []Input{{"br.json", br}}, NewRef: []Input{{"nr.json", nr}}}
		}, Config{}, "nr.json: stage main is not a valid measurement: missed sends"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Resamples = 200
			rep, err := Compare(tc.s(), tc.cfg)
			switch {
			case err != nil && strings.Contains(err.Error(), tc.want):
			case err != nil:
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			case len(rep.Regressed) > 0:
				t.Fatalf("regressed %v: the planted data has no regression", rep.Regressed)
			case !strings.Contains(rep.Inconclusive, tc.want):
				t.Fatalf("inconclusive %q (warnings %q): want it to say %q", rep.Inconclusive, rep.Warnings, tc.want)
			}
		})
	}
}

// TestMinRunsBelowTheUTest: with fewer runs a side than the U test needs to
// reach alpha it can never find a change; --min-runs below that is refused
// (with 3 runs a side and +125 % it said "~"), and so is one below what it
// needs to reach Holm's first threshold over the gated rows, where it could
// never find a gated change.
func TestMinRunsBelowTheUTest(t *testing.T) {
	b, n := runs(baseModel, 3, 1, "v1"), runs(baseModel, 3, 100, "v1")
	for _, c := range []struct {
		name string
		cfg  Config
		want string // "" accepted
	}{
		{"below alpha", Config{MinRuns: 3}, "--min-runs 3: the U test cannot reach alpha 0.01 with fewer than 5 runs a side"},
		{"below the default gate's family", Config{MinRuns: 5}, "--min-runs 5: the gated rows are judged as one family (Holm–Bonferroni over 10), whose first threshold α/10 = 0.001 the U test cannot reach with fewer than 7 runs a side"},
		{"one gated metric", Config{MinRuns: 5, Gate: []string{"e2e_p99_ms"}}, ""},
		{"the default gate's family", Config{MinRuns: 7}, ""},
	} {
		_, err := Compare(Sides{Base: b, New: n}, c.cfg)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestParseGate: --gate ” (an empty CI variable) is refused, not "gate
// nothing"; none is none; not given is the default.
func TestParseGate(t *testing.T) {
	for _, tc := range []struct {
		values []string
		given  bool
		want   []string
		err    bool
	}{{nil, false, nil, false}, {[]string{"none"}, true, []string{}, false}, {[]string{}, true, nil, true}, {[]string{"e2e_p99_ms", ""}, true, nil, true}, {[]string{"e2e_p99_ms"}, true, []string{"e2e_p99_ms"}, false}} {
		got, err := ParseGate(tc.values, tc.given)
		if (err != nil) != tc.err || fmt.Sprint(got) != fmt.Sprint(tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("ParseGate(%q, %v) = %q, %v", tc.values, tc.given, got, err)
		}
	}
}

// TestRecoveryNeverCameIsNoVerdict: a run whose recovery never came has
// recovery_time +Inf; leaving it out judged the runs that recovered only
// ("~" with two of seven new runs never recovering).
func TestRecoveryNeverCameIsNoVerdict(t *testing.T) {
	withRecovery := func(in []Input, never int) []Input {
		for i := range in {
			rec := result.Recovery{Event: "fault_end", Recovered: i >= never, RecoveryS: 2 + float64(i)/1000}
			in[i].Result.Scenarios[0].Resilience = &result.Resilience{Recoveries: []result.Recovery{rec}}
		}
		return in
	}
	b, n := withRecovery(runs(baseModel, 7, 1, "v1"), 0), withRecovery(runs(baseModel, 7, 100, "v1"), 2)
	if v, ok := resilience.Scalar(&n[0].Result.Scenarios[0], resilience.RecoveryName); !ok || !math.IsInf(v, 1) {
		t.Fatalf("the planted recovery reads %v, %v", v, ok)
	}
	rep, err := Compare(Sides{Base: b, New: n}, Config{Gate: []string{resilience.RecoveryName}, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	r := row(t, rep, "main", resilience.RecoveryName)
	if r.Verdict != Unknown || !strings.Contains(rep.Inconclusive, "2 run(s) have no finite") {
		t.Errorf("row %s %v; inconclusive %q", r.Verdict, r.Warnings, rep.Inconclusive)
	}
}

// TestCapacityInconclusiveSearch: a search that could not find the
// capacity, one that found only a floor, or one for another goodput
// target, gives no verdict (they were compared as exact capacities).
func TestCapacityInconclusiveSearch(t *testing.T) {
	search := func(path string, rate, high, target float64, why string) Input {
		r := baseModel.result(1, "v1")
		r.Capacity = &result.Capacity{RateRPS: rate, LowRPS: rate, HighRPS: high, GoodputTarget: target, Inconclusive: why}
		return Input{path, r}
	}
	for _, tc := range []struct {
		name string
		why  string
		high float64 // 0: no rate failed
		tgt  float64
		want string
	}{
		{"inconclusive", "goodput never reached the target", 12, 0.9, "the search was inconclusive"},
		{"another target", "", 12, 0.5, "another goodput target"},
		{"interrupted", "interrupted", 12, 0.9, "the run was interrupted"},
		{"a floor only", "", 0, 0.9, "no rate failed up to the search's maximum"},
	} {
		var base, nw []Input
		for i := range 5 {
			base = append(base, search(fmt.Sprintf("b%d", i), 9+0.1*float64(i), 11, 0.9, ""))
			why := tc.why
			if why == "interrupted" {
				why = ""
			}
			x := search(fmt.Sprintf("n%d", i), 10+0.1*float64(i), tc.high, tc.tgt, why)
			x.Result.Interrupted = tc.why == "interrupted"
			nw = append(nw, x)
		}
		rep, err := Compare(Sides{Base: base, New: nw}, Config{})
		if err != nil {
			t.Fatal(err)
		}
		if r := rep.Stages[0].Rows[0]; (r.Verdict != Unknown && tc.why != "interrupted") || !strings.Contains(rep.Inconclusive, tc.want) {
			t.Errorf("%s: %s, inconclusive %q", tc.name, r.Verdict, rep.Inconclusive)
		}
	}
}

// TestDrainFailures: failures after the last send count only by how much
// they raise the stage's error rate. A server failing 20 % of requests all
// along fails 20 % in the drain too, and is judged on its windows; one that
// hung requests until they timed out after the sends ended is not.
func TestDrainFailures(t *testing.T) {
	series := func(drainDone, drainFailed int) *result.Series {
		s := &result.Series{}
		for range 10 { // 10 s of 20 a second, 4 failing
			s.SentPerS, s.CompletedPerS, s.ErrorsPerS = append(s.SentPerS, 20), append(s.CompletedPerS, 20), append(s.ErrorsPerS, 4)
		}
		s.SentPerS, s.CompletedPerS, s.ErrorsPerS = append(s.SentPerS, 0), append(s.CompletedPerS, drainDone), append(s.ErrorsPerS, drainFailed)
		return s
	}
	for _, tc := range []struct {
		name             string
		done, failed     int
		flagged          bool
		wantFailed       int
		raiseLo, raiseHi float64
	}{
		// The second of the last send is left out of the windows too: its
		// 4 failures count with the drain's.
		{"20 % all along", 20, 4, false, 8, -0.001, 0.001},
		{"hung until timeout", 60, 60, true, 64, 0.15, 0.4},
	} {
		failed, raise := drainFailures(series(tc.done, tc.failed))
		if failed != tc.wantFailed || raise < tc.raiseLo || raise > tc.raiseHi || (raise > drainFailShare) != tc.flagged {
			t.Errorf("%s: %d failed in the drain, raise %.3f", tc.name, failed, raise)
		}
	}
}

// TestRunsOverlapNoVerdict: two runs a side, fewer than the U test needs,
// so their windows are pooled. Run levels 1.00 and 1.20 against 1.10 and
// 1.30 overlap, yet the pooled windows, with no run-to-run variance in the
// test, called +9 % "regressed" (p 3e-4); now it is no verdict. Runs that
// do not overlap keep theirs.
func TestRunsOverlapNoVerdict(t *testing.T) {
	side := func(seed uint64, levels ...float64) []Input {
		var in []Input
		for i, l := range levels {
			m := baseModel
			m.Noise, m.E2Ems, m.TTFTms, m.ITLms = 0.01, baseModel.E2Ems*l, baseModel.TTFTms*l, baseModel.ITLms*l
			in = append(in, Input{fmt.Sprintf("r%d-%d.json", seed, i), m.result(seed+uint64(i), "v1")})
		}
		return in
	}
	for _, tc := range []struct {
		name       string
		base, news []float64
		want       string
	}{{"overlapping", []float64{1.00, 1.20}, []float64{1.10, 1.30}, Unknown}, {"apart", []float64{1.00, 1.02}, []float64{1.20, 1.22}, Regressed}} {
		rep, err := Compare(Sides{Base: side(10, tc.base...), New: side(20, tc.news...)}, Config{Resamples: 200})
		if err != nil {
			t.Fatal(err)
		}
		if r := row(t, rep, "main", "e2e_p99_ms"); r.Verdict != tc.want || r.Method != "welch+block-bootstrap" {
			t.Errorf("%s: e2e_p99 %s by %s (%+.3f, p %.2g) %q, want %s", tc.name, r.Verdict, r.Method, r.Change, r.P, r.Warnings, tc.want)
		}
	}
}

// TestStageWarmupLeftOut: each stage's windows start after its own
// warm-up. A second stage with a 20 s warm-up whose first 20 s are ten
// times slower in the new runs (a cold cache) is no regression; cut at the
// first stage's warm-up (none), as compare once did, it was. A result
// from before stages recorded their warm-up keeps its config's for every
// stage; a stage warm-up that differs is a different load.
func TestStageWarmupLeftOut(t *testing.T) {
	twoStages := func(seed uint64, sut string, cold float64) *result.Result {
		r := baseModel.result(seed, sut)
		peak := r.Scenarios[0]
		peak.Name, peak.Load.Warmup = "peak", "20s"
		s := peak.Series
		for _, col := range []*[]float64{&s.TTFTp50ms, &s.TTFTp99ms, &s.TTFTMeanMS, &s.E2Ep50ms, &s.E2Ep99ms, &s.E2EMeanMS} {
			c := slices.Clone(*col)
			for i := range 20 {
				c[i] *= cold
			}
			*col = c
		}
		peak.Series = s
		r.Scenarios = append(r.Scenarios, peak)
		return r
	}
	sides := Sides{Base: []Input{{"b", twoStages(1, "v1", 1)}}, New: []Input{{"n", twoStages(2, "v2", 10)}}}
	rep, err := Compare(sides, Config{Seed: 1, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"ttft_p99_ms", "e2e_p99_ms"} {
		// Old: change +155 % (11 windows, "~" only as they were autocorrelated).
		if r := row(t, rep, "peak", m); r.Verdict == Regressed || math.Abs(r.Change) > 0.1 {
			t.Errorf("peak %s: %s (change %+.2f): the warm-up's seconds were compared", m, r.Verdict, r.Change)
		}
	}

	for _, tc := range []struct {
		name          string
		config, first string
		second, want  string
	}{
		{"each stage its own", "", "", "20s", "20s"},
		{"first stage's own", "5s", "5s", "", ""},
		{"before stages recorded theirs", "5s", "", "", "5s"},
	} {
		r := baseModel.result(1, "v1")
		r.Config.Warmup = tc.config
		r.Scenarios[0].Load.Warmup = tc.first
		r.Scenarios = append(r.Scenarios, r.Scenarios[0])
		r.Scenarios[1].Load.Warmup = tc.second
		want := 2
		if d, _ := time.ParseDuration(tc.want); d > 0 {
			want += int(d.Seconds())
		}
		if got := span(r, &r.Scenarios[1], Config{Settle: 2}).Skip; got != want {
			t.Errorf("%s: second stage skips %d s, want %d", tc.name, got, want)
		}
	}

	a, b := twoStages(1, "v1", 1), twoStages(2, "v1", 1)
	b.Scenarios[1].Load.Warmup = "5s"
	if d := differences(a, b, false); len(d) != 1 || !strings.Contains(d[0], "scenarios[peak].load.warmup") {
		t.Errorf("stage warm-ups 20s and 5s: differences %q", d)
	}
}
