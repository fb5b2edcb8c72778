package capacity

import (
	"testing"

	"github.com/spate-dev/spate/llmtest"
	"github.com/spate-dev/spate/result"
)

// TestKnee: a ramp's knee is its highest stage that passes capacity's
// rule. Goodput counts at both ends of its measurement error (a stage
// whose range straddles the target is not the knee; one wholly over it
// is), and a stage the server fell behind on is never the knee, whatever
// its goodput (it was, on goodput alone: the quickstart named rate-16 the
// knee while the server completed 9.4 of the 15.3 requests a second sent).
func TestKnee(t *testing.T) {
	stage := func(rate, g float64, me *result.MeasurementError) result.Scenario {
		sc := result.Scenario{Load: result.Load{Mode: "open", TargetRate: rate, Valid: true}, Requests: result.Requests{Succeeded: 10}, MeasurementError: me}
		sc.Goodput.Fraction = g
		llmtest.KeptUp(&sc, 8)
		return sc
	}
	behind := stage(40, 1, nil)
	for i := range behind.Series.CompletedPerS {
		behind.Series.CompletedPerS[i] = 25
	}
	straddle := &result.MeasurementError{Goodput: result.Range{Low: 0.88, High: 0.97}}
	over := &result.MeasurementError{Goodput: result.Range{Low: 0.92, High: 0.97}}
	for _, c := range []struct {
		name   string
		scs    []result.Scenario
		want   int
		reason string // of the stage after the knee
	}{
		{"exact", []result.Scenario{stage(10, 1, nil), stage(20, 0.95, nil), stage(30, 0.5, nil)}, 1, ReasonGoodput},
		{"straddles", []result.Scenario{stage(10, 1, nil), stage(20, 0.95, straddle), stage(30, 0.5, nil)}, 0, ReasonImprecise},
		{"wholly over", []result.Scenario{stage(10, 1, nil), stage(20, 0.95, over), stage(30, 0.5, nil)}, 1, ReasonGoodput},
		{"fell behind", []result.Scenario{stage(10, 1, nil), stage(20, 1, nil), behind}, 1, ReasonUnderdelivery},
	} {
		k, as := Knee(c.scs, 0.9)
		if k != c.want || len(as) != len(c.scs) || as[k+1].Reason != c.reason {
			t.Errorf("%s: knee %d (next stage: %q), want %d (%q)", c.name, k, as[min(k+1, len(as)-1)].Reason, c.want, c.reason)
		}
	}
}

// TestQueueGrowthIsSurely: the queue criterion fails a trial only when its
// requests in flight surely grew, beyond the swings of Poisson sends and
// batched completions. A server that kept up at 4 req/s with in flight
// swinging 5–15 and ending on a burst is not growing (it failed, "grew by
// 5", in the quickstart's 12 s stage at 4 req/s); one whose queue climbs 3
// a second is.
func TestQueueGrowthIsSurely(t *testing.T) {
	stage := func(flight []int) result.Scenario {
		sc := result.Scenario{Load: result.Load{Mode: "open", TargetRate: 4, Valid: true}, Requests: result.Requests{Succeeded: 40}}
		sc.Goodput.Fraction = 1
		llmtest.KeptUp(&sc, len(flight))
		copy(sc.Series.InFlight, flight)
		for i := range sc.Series.E2Ep50ms {
			sc.Series.E2Ep50ms[i] = 1900 // the quickstart's requests: 2 s each
		}
		return sc
	}
	for _, c := range []struct {
		name   string
		flight []int
		pass   bool
	}{
		{"swings, a burst at the end", []int{3, 9, 10, 9, 5, 5, 7, 7, 9, 11, 14, 15}, true},
		{"climbing", []int{2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35}, false},
	} {
		sc := stage(c.flight)
		a := Assess(&sc, 4, Criteria{Goodput: 0.9})
		if a.Pass != c.pass {
			t.Errorf("%s: pass %v (%s, growth %.1f ± %.1f over %d s), want %v", c.name, a.Pass, a.Reason, a.QueueGrowth, a.QueueGrowthSE, a.SteadyS, c.pass)
		}
	}
}

// TestBatchFillingIsNotFallingBehind: the quickstart's 12 s stages at 8 and
// 12 req/s against the small-gpu simulator, as recorded. At 8 req/s its
// requests lengthen from 2.3 to 3.7 s as its batch fills (TPOT; TTFT stays
// near 100 ms) and it kept up, as a 45 s run at that rate showed (requests
// in flight steady at 20-40, every request within the SLO): it passes.
// Set against the fastest lag its last completions read as missing, and
// it "fell behind, completed 75 %". At 12 req/s requests in flight climb
// to 70 and stay (a 45 s run: goodput 79 %): it fails.
func TestBatchFillingIsNotFallingBehind(t *testing.T) {
	stage := func(rate float64, sent, done, flight []int, e2e, ttft []float64) result.Scenario {
		sc := result.Scenario{Load: result.Load{Mode: "open", Arrival: "poisson", TargetRate: rate, Valid: true}, Requests: result.Requests{Succeeded: 100}}
		sc.Goodput.Fraction = 1
		sc.Goodput.SLOms = map[string]float64{"ttft": 1000, "tpot": 100}
		sc.Series = result.Series{SentPerS: sent, CompletedPerS: done, ErrorsPerS: make([]int, len(sent)), InFlight: flight, E2Ep50ms: e2e, TTFTp50ms: ttft}
		return sc
	}
	at8 := stage(8, []int{9, 4, 5, 6, 11, 7, 1, 11, 12, 10, 9, 4, 0, 0}, []int{0, 0, 3, 9, 2, 6, 5, 12, 5, 1, 2, 17, 20, 7},
		[]int{9, 13, 15, 16, 21, 25, 23, 19, 24, 33, 40, 42, 26, 6},
		[]float64{0, 0, 2343, 2392, 2376, 2720, 2851, 2589, 2687, 2949, 3621, 3736, 3113, 2228},
		[]float64{0, 0, 65, 94, 71, 90, 93, 91, 129, 98, 74, 118, 175, 117})
	at12 := stage(12, []int{11, 7, 12, 12, 5, 19, 16, 7, 17, 8, 9, 14, 0, 0, 0}, []int{0, 0, 2, 3, 11, 2, 3, 12, 9, 2, 14, 24, 15, 22, 18},
		[]int{11, 18, 28, 39, 36, 48, 61, 65, 64, 70, 69, 64, 54, 39, 17},
		[]float64{0, 0, 2753, 3342, 3424, 3473, 4522, 4882, 4751, 5112, 5374, 5145, 4751, 4178, 2736},
		[]float64{0, 0, 62, 85, 125, 62, 109, 158, 171, 99, 187, 226, 168, 305, 213})
	if a := Assess(&at8, 8, Criteria{Goodput: 0.9}); !a.Pass {
		t.Errorf("8 req/s: %s (completed %.0f %% of %.1f sent, queue +%.1f ± %.1f), want a pass", a.Reason, 100*a.Delivered, a.sent, a.QueueGrowth, a.QueueGrowthSE)
	}
	if a := Assess(&at12, 12, Criteria{Goodput: 0.9}); a.Pass {
		t.Errorf("12 req/s passed (completed %.0f %%, queue +%.1f ± %.1f), want a failure", 100*a.Delivered, a.QueueGrowth, a.QueueGrowthSE)
	}
}
