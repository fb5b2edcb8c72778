package resilience

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/spate-dev/spate/result"
)

func line(n int, a, b float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = a + b*float64(i)
	}
	return xs
}

func TestSlope(t *testing.T) {
	spiked := line(40, 100, 3)
	spiked[15] = 5000
	gappy := line(30, 100, -2)
	has := make([]bool, 30)
	for i := range has {
		has[i] = i%3 != 0 // a third of the seconds had no completions
		if !has[i] {
			gappy[i] = 99999 // must be ignored
		}
	}
	for _, c := range []struct {
		name    string
		p99     []float64
		has     []bool
		w       int
		want    float64
		windows int
		ok      bool
	}{
		{"linear", line(20, 100, 3), nil, 10, 3, 11, true},
		{"flat", line(20, 250, 0), nil, 5, 0, 16, true},
		// 21 of the 31 windows miss the spike: the median is exact.
		{"spike is ignored by the median", spiked, nil, 10, 3, 31, true},
		{"empty seconds are left out", gappy, has, 6, -2, 25, true},
		{"too short", line(5, 1, 1), nil, 10, 0, 0, false},
		{"window of one", line(5, 1, 1), nil, 1, 0, 0, false},
	} {
		got, k, ok := Slope(c.p99, c.has, c.w)
		if ok != c.ok || k != c.windows || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: Slope = %v, %d windows, %v; want %v, %d, %v", c.name, got, k, ok, c.want, c.windows, c.ok)
		}
	}
}

func TestRecovery(t *testing.T) {
	over := func(n, m int) []float64 { // n seconds at 900 ms, then m at 300 ms
		xs := make([]float64, 0, n+m)
		for range n {
			xs = append(xs, 900)
		}
		for range m {
			xs = append(xs, 300)
		}
		return xs
	}
	weights := make([]int, 20)
	for i := range weights {
		weights[i] = 1
		if i >= 5 {
			weights[i] = 10
		}
	}
	relapse := over(5, 15)
	relapse[14] = 3000
	for _, c := range []struct {
		name    string
		p99     []float64
		weights []int
		event   int
		want    int
		ok      bool
	}{
		// Windows of 5: the one starting at 3 holds 900,900,300,300,300
		// (540 > 500), the one at 4 holds 420: recovered 4 s after.
		{"unweighted", over(5, 15), nil, 0, 4, true},
		// Weighted by completions the window at 1 is already 471 ms.
		{"weighted", over(5, 15), weights, 0, 1, true},
		{"from a later event", over(5, 15), nil, 2, 2, true},
		{"never over", over(0, 20), nil, 0, 0, true},
		{"never back", over(20, 0), nil, 0, 0, false},
		// A relapse at second 14 (window mean (3000+4×300)/5 = 840) puts
		// recovery after it: the last window over starts at 14.
		{"relapse", relapse, nil, 0, 15, true},
	} {
		got, ok := Recovery(c.p99, c.weights, nil, c.event, 5, 500)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: Recovery = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestFigures(t *testing.T) {
	n := 30
	s := &result.Series{}
	for i := range n + 1 {
		s.SentPerS = append(s.SentPerS, 10)
		s.CompletedPerS = append(s.CompletedPerS, 10)
		s.ErrorsPerS = append(s.ErrorsPerS, 0)
		ttft := 200.0
		if i < 6 {
			ttft = 1200 // a queue built by the load step drains in 6 s
		}
		s.TTFTp99ms = append(s.TTFTp99ms, ttft)
		s.E2Ep99ms = append(s.E2Ep99ms, 1000+2*float64(i))
	}
	// The drain after the last send is left out.
	s.SentPerS = append(s.SentPerS, 0)
	s.CompletedPerS = append(s.CompletedPerS, 3)
	s.ErrorsPerS = append(s.ErrorsPerS, 0)
	s.TTFTp99ms = append(s.TTFTp99ms, 99999)
	s.E2Ep99ms = append(s.E2Ep99ms, 99999)

	r := Figures(s, map[string]float64{"ttft": 500, "e2e": 2000}, Options{SlopeWindow: 10, RecoveryWindow: 3, AfterFaults: true, FaultEnds: []float64{20}})
	if r == nil {
		t.Fatal("no figures")
	}
	if r.E2Ep99SlopeMSPerS == nil || math.Abs(*r.E2Ep99SlopeMSPerS-2) > 1e-9 {
		t.Errorf("e2e slope %v, want 2 ms/s", r.E2Ep99SlopeMSPerS)
	}
	if r.SlopeWindows != 21 || r.SLOMetric != "ttft" || r.SLOms != 500 {
		t.Errorf("windows %d, slo %s %v", r.SlopeWindows, r.SLOMetric, r.SLOms)
	}
	// Windows of 3 over [1200×6, 200…]: the window at 5 is
	// (1200+200+200)/3 = 533 > 500, the one at 6 is 200: 6 s.
	want := []result.Recovery{{Event: "fault_end", AtS: 0, Recovered: true, RecoveryS: 6}, {Event: "fault_end", AtS: 20, Recovered: true, RecoveryS: 0}}
	if len(r.Recoveries) != 2 || r.Recoveries[0] != want[0] || r.Recoveries[1] != want[1] {
		t.Errorf("recoveries %+v, want %+v", r.Recoveries, want)
	}
	if Figures(s, nil, Options{SlopeWindow: 40}) != nil {
		t.Error("figures for a series shorter than the slope window")
	}
	if r := Figures(s, nil, Options{}); r == nil || r.Recoveries != nil || r.SLOMetric != "" {
		t.Errorf("no SLO: %+v, want slopes only", r)
	}
}

func FuzzSlope(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 4)
	f.Fuzz(func(t *testing.T, b []byte, w int) {
		p := make([]float64, len(b))
		for i, x := range b {
			p[i] = float64(x)
		}
		if v, _, ok := Slope(p, nil, w%64); ok && (math.IsNaN(v) || math.IsInf(v, 0)) {
			t.Fatalf("slope %v", v)
		}
		if s, ok := Recovery(p, nil, nil, 0, w%64, 100); ok && s < 0 {
			t.Fatalf("recovery %d", s)
		}
	})
}

// TestErrorRateSlopeAndBaseline: the error-rate slope is in percentage
// points a minute; without an SLO, recovery after a fault is judged
// against 1.5 × the E2E p99 before it; the scalars read the figures.
func TestErrorRateSlopeAndBaseline(t *testing.T) {
	s := &result.Series{}
	for i := range 41 {
		done := 100
		errs := i / 4 // 0.25 pp a second: 15 pp a minute
		e2e := 400.0
		if i >= 20 && i < 25 {
			e2e = 2000 // a fault from 20 s to 25 s, then 3 s to drain
		}
		if i >= 25 && i < 28 {
			e2e = 800
		}
		s.SentPerS, s.CompletedPerS, s.ErrorsPerS = append(s.SentPerS, done), append(s.CompletedPerS, done), append(s.ErrorsPerS, errs)
		s.TTFTp99ms, s.E2Ep99ms = append(s.TTFTp99ms, 100), append(s.E2Ep99ms, e2e)
	}
	opts := Options{SlopeWindow: 10, RecoveryWindow: 1, FaultStarts: []float64{20}, FaultEnds: []float64{24.5}}
	r := Figures(s, nil, opts)
	if r.ErrorRateSlopePPPerMin == nil || math.Abs(*r.ErrorRateSlopePPPerMin-15) > 1 {
		t.Errorf("error-rate slope %v, want ≈ 15 pp/min", r.ErrorRateSlopePPPerMin)
	}
	// With a steady 1 % of errors, the latency decides (errors that rise
	// through the stage are TestRecoveryCountsFailures's).
	s.ErrorsPerS = slices.Repeat([]int{1}, len(s.ErrorsPerS))
	r = Figures(s, nil, opts)
	// Baseline: 400 ms before the fault → bound 600 ms; from second 25
	// (the first after the end at 24.5) 800 ms for 3 s: recovered at 28,
	// 3.5 s after the end.
	if r.SLOSource != "baseline" || r.SLOms != 600 || len(r.Recoveries) != 2 {
		t.Fatalf("baseline %q %v, recoveries %+v", r.SLOSource, r.SLOms, r.Recoveries)
	}
	if got := r.Recoveries[1]; got.Event != "fault_end" || got.AtS != 24.5 || !got.Recovered || got.RecoveryS != 3.5 {
		t.Errorf("fault_end recovery %+v, want at 24.5 after 3.5 s", got)
	}
	// The load step is judged before the fault only: never over.
	if got := r.Recoveries[0]; got.Event != "load_step" || !got.Recovered || got.RecoveryS != 0 {
		t.Errorf("load_step %+v", got)
	}
	sc := &result.Scenario{Resilience: r}
	if v, ok := Scalar(sc, RecoveryName); !ok || v != 3500 {
		t.Errorf("recovery_time %v %v, want 3500 ms", v, ok)
	}
	if v, ok := Scalar(sc, ErrorSlopeName); !ok || v != *r.ErrorRateSlopePPPerMin {
		t.Errorf("error_rate_slope %v %v", v, ok)
	}
	if _, ok := Scalar(sc, MSR); ok {
		t.Error("msr without chaos figures")
	}
	r.Recoveries[1].Recovered = false
	if v, ok := Scalar(sc, RecoveryName); !ok || !math.IsInf(v, 1) {
		t.Errorf("unrecovered: %v %v, want +Inf", v, ok)
	}
	// A fault from the start leaves no baseline and no SLO: no recovery,
	// saying why.
	r = Figures(s, nil, Options{SlopeWindow: 10, FaultStarts: []float64{0}, FaultEnds: []float64{24.5}})
	if r.Recoveries != nil || len(r.Warnings) == 0 {
		t.Errorf("no baseline: %+v", r)
	}
}

// TestRecoveryCountsFailures: a fault from 5 s to 10 s, after which every
// request fails fast for 20 s, then the service is back. Recovery is at
// 30 s (20 s after the end) whatever the SLO: the failures have no
// latency, and with only successes weighed it was 0 s, recovered.
func TestRecoveryCountsFailures(t *testing.T) {
	s := &result.Series{}
	for i := range 51 {
		done, failed, p99 := 10, 0, 300.0
		if i >= 10 && i < 30 {
			failed, p99 = 10, 0 // all failed: no latency that second
		}
		s.SentPerS, s.CompletedPerS, s.ErrorsPerS = append(s.SentPerS, done), append(s.CompletedPerS, done), append(s.ErrorsPerS, failed)
		s.TTFTp99ms, s.E2Ep99ms = append(s.TTFTp99ms, p99/3), append(s.E2Ep99ms, p99)
	}
	for _, slo := range []map[string]float64{{"ttft": 500}, {"e2e": 2000}, nil} {
		r := Figures(s, slo, Options{SlopeWindow: 10, RecoveryWindow: 5, FaultStarts: []float64{5}, FaultEnds: []float64{10}})
		var got *result.Recovery
		for i := range r.Recoveries {
			if r.Recoveries[i].Event == "fault_end" {
				got = &r.Recoveries[i]
			}
		}
		if got == nil || !got.Recovered || got.RecoveryS != 20 {
			t.Errorf("SLO %v: recovery %+v, want recovered 20 s after the fault's end", slo, got)
		}
	}
	// Never back: not recovered, recovery_time +Inf.
	for i := 30; i < len(s.ErrorsPerS); i++ {
		s.ErrorsPerS[i], s.E2Ep99ms[i], s.TTFTp99ms[i] = 10, 0, 0
	}
	r := Figures(s, map[string]float64{"e2e": 2000}, Options{SlopeWindow: 10, RecoveryWindow: 5, FaultStarts: []float64{5}, FaultEnds: []float64{10}})
	if v, ok := Scalar(&result.Scenario{Resilience: r}, RecoveryName); !ok || !math.IsInf(v, 1) {
		t.Errorf("failing to the end: recovery_time %v %v, want +Inf", v, ok)
	}
}

// TestRecoveryHealthyErrorsNoFalseRed: a healthy service with chance
// errors (1 % and 2 % at 20 req/s, its P99 always within bounds) and a
// fault that changed nothing must recover at once. Judged on the window's
// raw error rate against the rate before plus a point, 16 % of such runs
// were "not recovered" (recovery_time +Inf: exit 3) and 26 % after a fault
// stage; judged on the lower end of its 99 % interval against the rate
// before plus two points (one point: 3 % late), at most 1 % may recover
// later than 5 s, none fail. 400 seeded runs each (deterministic).
func TestRecoveryHealthyErrorsNoFalseRed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     float64
		after bool
	}{{"1 % errors", 0.01, false}, {"2 % errors", 0.02, false}, {"1 % after a fault stage", 0.01, true}, {"2 % after a fault stage", 0.02, true}} {
		late, never := 0, 0
		const runs = 400
		for seed := range uint64(runs) {
			rng := rand.New(rand.NewPCG(seed, 7))
			s := &result.Series{}
			for range 91 {
				errs := 0
				for range 20 {
					if rng.Float64() < tc.p {
						errs++
					}
				}
				s.SentPerS, s.CompletedPerS, s.ErrorsPerS = append(s.SentPerS, 20), append(s.CompletedPerS, 20), append(s.ErrorsPerS, errs)
				s.TTFTp99ms, s.E2Ep99ms = append(s.TTFTp99ms, 100), append(s.E2Ep99ms, 400+20*rng.Float64())
			}
			o := Options{SlopeWindow: 10, RecoveryWindow: 5, FaultStarts: []float64{30}, FaultEnds: []float64{40}}
			if tc.after {
				o = Options{SlopeWindow: 10, RecoveryWindow: 5, AfterFaults: true}
			}
			r := Figures(s, map[string]float64{"e2e": 2000}, o)
			for _, rec := range r.Recoveries {
				switch {
				case rec.Event != "fault_end":
				case !rec.Recovered:
					never++
				case rec.RecoveryS > 5:
					late++
				}
			}
		}
		t.Logf("%s: %d of %d not recovered, %d recovered after 5 s", tc.name, never, runs, late)
		if never > 0 || late > runs/100 {
			t.Errorf("%s: %d of %d healthy runs not recovered, %d recovered after 5 s", tc.name, never, runs, late)
		}
	}
}

// TestRecoveryTooShortToTell: a series that ends less than one window
// after its last second over the SLO, with the seconds since under it,
// cannot tell whether the service recovered (it was reported as never
// recovering, +Inf, a false red); one whose last second is still over has
// not recovered; and recovery_time is then NaN (no value: a threshold on
// it cannot judge), not +Inf.
func TestRecoveryTooShortToTell(t *testing.T) {
	over := func(n, m int) []float64 {
		var xs []float64
		for range n {
			xs = append(xs, 900)
		}
		for range m {
			xs = append(xs, 300)
		}
		return xs
	}
	for _, c := range []struct {
		name   string
		p99    []float64
		status int
	}{
		// Windows of 5 over 8 s: the last whole window (3..7) holds two
		// seconds at 900, then three at 300 — back under, too soon to tell.
		{"recovered at the end", over(5, 3), Unmeasured},
		{"still over at the end", over(8, 0), NotRecovered},
		{"no whole window", over(0, 3), Unmeasured},
		{"recovered in time", over(5, 10), Recovered},
	} {
		if _, st := RecoveryStatus(c.p99, nil, nil, 0, 5, 500); st != c.status {
			t.Errorf("%s: status %d, want %d", c.name, st, c.status)
		}
	}
	r := &result.Resilience{Recoveries: []result.Recovery{{Event: "fault_end", AtS: 10, RecoveryS: 3, Unmeasured: true}}}
	if v, ok := recoveryTime(r); !ok || !math.IsNaN(v) {
		t.Errorf("recovery_time %v, %v: want NaN (cannot tell)", v, ok)
	}
	r.Recoveries = append(r.Recoveries, result.Recovery{Event: "fault_end", AtS: 20, Recovered: true, RecoveryS: 8})
	if v, ok := recoveryTime(r); !ok || !math.IsNaN(v) {
		t.Errorf("recovery_time %v, %v with one window too short: want NaN", v, ok)
	}
	r.Recoveries = append(r.Recoveries, result.Recovery{Event: "fault_end", AtS: 30, RecoveryS: 8})
	r.Recoveries[2].Recovered = false
	if v, _ := recoveryTime(r); !math.IsInf(v, 1) {
		t.Errorf("recovery_time %v with a window never recovered: want +Inf (a failure whatever the others)", v)
	}
}
