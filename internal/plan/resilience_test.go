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
	// A fault window from the start to 1.5 s (the chaos observer's), and
	// one from 5 s still open at the end. The first leaves no load step
	// to recover from (the fault was on); its recovery is judged from the
	// first whole second after its end (2) up to the next onset (5): the
	// window at 2 (500, 50 → 275) is over, the one at 3 is not: back at
	// 3 s, 1.5 s after the end.
	third := stage()
	third.Chaos = &result.Chaos{Windows: []result.ChaosWindow{{StartS: 0, EndS: 1.5}, {StartS: 5, EndS: 8}}}
	o.StageEnd(runner.Stage{Name: "inner faults"}, third)
	want = []result.Recovery{{Event: "fault_end", AtS: 1.5, Recovered: true, RecoveryS: 1.5}}
	if got := third.Resilience.Recoveries; len(got) != 1 || got[0] != want[0] {
		t.Errorf("fault window inside the stage: %+v, want %+v", got, want)
	}
	// A fault from 4 s to 5 s: the load step is judged on seconds 0–3
	// only (windows at 0, 1 over; at 2: 275 over; … recovered at 3 would
	// need a window of 2 inside [0, 4): the one at 2 is the last, still
	// over), but second 3 is back under the SLO: the 4 s watched cannot
	// tell whether it recovered (it is not "never recovered").
	fourth := stage()
	fourth.Chaos = &result.Chaos{Windows: []result.ChaosWindow{{StartS: 4, EndS: 5}}}
	o.StageEnd(runner.Stage{Name: "late fault"}, fourth)
	want = []result.Recovery{{Event: "load_step", Recovered: false, RecoveryS: 4, Unmeasured: true}, {Event: "fault_end", AtS: 5, Recovered: true, RecoveryS: 0}}
	if got := fourth.Resilience.Recoveries; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("late fault: %+v, want %+v", got, want)
	}
}
