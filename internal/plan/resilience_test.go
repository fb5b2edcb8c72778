package plan

import (
	"testing"

	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/result"
)

// TestResilienceObserverFaultEnd: the stage after a stage with faults
// counts its start as a fault's end.
func TestResilienceObserverFaultEnd(t *testing.T) {
	o := &resilienceObserver{}
	o.opts.SlopeWindow, o.opts.RecoveryWindow = 3, 2
	stage := func() *result.Scenario {
		sc := &result.Scenario{Goodput: result.Goodput{SLOms: map[string]float64{"ttft": 100}}}
		for i := range 8 {
			ttft := 50.0
			if i < 3 {
				ttft = 500 // over the SLO for the first 3 s
			}
			s := &sc.Series
			s.SentPerS, s.CompletedPerS, s.ErrorsPerS = append(s.SentPerS, 1), append(s.CompletedPerS, 1), append(s.ErrorsPerS, 0)
			s.TTFTp99ms, s.E2Ep99ms = append(s.TTFTp99ms, ttft), append(s.E2Ep99ms, ttft)
		}
		return sc
	}
	first, second := stage(), stage()
	o.StageEnd(runner.Stage{Name: "chaos", Faults: &runner.Faults{URL: "http://x/admin/faults"}}, first)
	o.StageEnd(runner.Stage{Name: "after"}, second)
	// Windows of 2 over [500 500 500 50 …] (7 whole seconds): the one at 2
	// is 275 > 100, the one at 3 is 50: 3 s.
	want := []result.Recovery{{Event: "load_step", Recovered: true, RecoveryS: 3}}
	if got := first.Resilience.Recoveries; len(got) != 1 || got[0] != want[0] {
		t.Errorf("first stage %+v, want %+v", got, want)
	}
	want[0].Event = "fault_end"
	if got := second.Resilience.Recoveries; len(got) != 1 || got[0] != want[0] {
		t.Errorf("stage after faults %+v, want %+v", got, want)
	}
	// A fault window that closed at 1.5 s inside the stage (the chaos
	// observer's), and one still open at the end, which is skipped.
	third := stage()
	third.Chaos = &result.Chaos{Windows: []result.ChaosWindow{{StartS: 0, EndS: 1.5}, {StartS: 5, EndS: 8}}}
	o.StageEnd(runner.Stage{Name: "inner faults"}, third)
	// From second 1: windows at 1 (500, 500) and 2 (500, 50 → 275) are
	// over, the one at 3 is not: 2 s.
	want = append(want, result.Recovery{Event: "fault_end", AtS: 1, Recovered: true, RecoveryS: 2})
	want[0].Event = "load_step"
	if got := third.Resilience.Recoveries; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("fault window inside the stage: %+v, want %+v", got, want)
	}
}
