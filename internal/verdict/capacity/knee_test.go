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
