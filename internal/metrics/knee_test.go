package metrics

import (
	"testing"

	"github.com/spate-dev/spate/result"
)

// TestKneeAtBothEnds: the knee is the highest valid stage whose goodput
// met the target at both ends of its measurement error; a stage whose
// range straddles the target is not the knee (it was, on its measured
// figure alone), and one wholly over it is.
func TestKneeAtBothEnds(t *testing.T) {
	stage := func(g float64, me *result.MeasurementError) result.Scenario {
		sc := result.Scenario{Load: result.Load{Valid: true}, Requests: result.Requests{Succeeded: 10}, MeasurementError: me}
		sc.Goodput.Fraction = g
		return sc
	}
	straddle := &result.MeasurementError{Goodput: result.Range{Low: 0.88, High: 0.97}}
	over := &result.MeasurementError{Goodput: result.Range{Low: 0.92, High: 0.97}}
	for _, c := range []struct {
		name string
		scs  []result.Scenario
		want int
	}{
		{"exact", []result.Scenario{stage(1, nil), stage(0.95, nil), stage(0.5, nil)}, 1},
		{"straddles", []result.Scenario{stage(1, nil), stage(0.95, straddle), stage(0.5, nil)}, 0},
		{"wholly over", []result.Scenario{stage(1, nil), stage(0.95, over), stage(0.5, nil)}, 1},
	} {
		if got := Knee(c.scs, 0.9); got != c.want {
			t.Errorf("%s: knee %d, want %d", c.name, got, c.want)
		}
	}
	if sc := stage(0.95, straddle); !Imprecise(&sc, 0.9) {
		t.Error("a goodput range of [0.88, 0.97] around 0.9 is imprecise")
	}
}
