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
