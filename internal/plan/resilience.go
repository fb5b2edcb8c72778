package plan

import (
	"context"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/verdict/resilience"
	"github.com/spate-dev/spate/result"
)

func resilienceDefaults() experiment.Resilience {
	return experiment.Resilience{
		Enabled:        new(true),
		Window:         resilience.DefaultSlopeWindow * time.Second,
		RecoveryWindow: resilience.DefaultRecoveryWindow * time.Second,
	}
}

// resilienceFeature adds the resilience figures (P99 slope, recovery time)
// to every stage whose series is long enough (experiment section
// resilience).
type resilienceFeature struct{}

func (resilienceFeature) check(_ context.Context, x *experiment.Experiment) error {
	rs := x.Resilience
	if rs.Window < 2*time.Second || rs.Window%time.Second != 0 {
		return invalidf("--resilience-window %v: want whole seconds, at least 2s", rs.Window)
	}
	if rs.RecoveryWindow < time.Second || rs.RecoveryWindow%time.Second != 0 {
		return invalidf("--recovery-window %v: want whole seconds, at least 1s", rs.RecoveryWindow)
	}
	return nil
}

func (resilienceFeature) start(context.Context, *Run) error { return nil }

func (resilienceFeature) apply(_ context.Context, r *Run) error {
	rs := r.X.Resilience
	if *rs.Enabled {
		r.Plan.Observers = append(r.Plan.Observers, &resilienceObserver{opts: resilience.Options{
			SlopeWindow: int(rs.Window / time.Second), RecoveryWindow: int(rs.RecoveryWindow / time.Second),
		}})
	}
	return nil
}

func (resilienceFeature) finish(*Run, *result.Result) error { return nil }

// resilienceObserver fills each stage's Resilience from its series at the
// stage's end; it remembers whether the stage before had faults, so that
// the next stage's start counts as a fault's end.
type resilienceObserver struct {
	opts       resilience.Options
	prevFaults bool
}

func (o *resilienceObserver) StageStart(context.Context, runner.Stage, time.Time) {}
func (o *resilienceObserver) Sent(string, time.Time, time.Time, bool)             {}
func (o *resilienceObserver) Record(string, *record.Record)                       {}

// StageEnd computes the figures. Fault windows that closed during the
// stage (sc.Chaos, filled by the chaos observer, which runs first: see
// features) add a recovery from each end; their onsets bound the
// recoveries before them (a fault on from the start leaves no load step to
// recover from).
func (o *resilienceObserver) StageEnd(st runner.Stage, sc *result.Scenario) {
	opts := o.opts
	opts.AfterFaults = o.prevFaults
	o.prevFaults = st.Faults != nil
	if sc.Chaos != nil {
		secs := float64(len(sc.Series.SentPerS))
		for _, w := range sc.Chaos.Windows {
			opts.FaultStarts = append(opts.FaultStarts, w.StartS)
			if w.EndS > 0 && w.EndS+1 < secs {
				opts.FaultEnds = append(opts.FaultEnds, w.EndS)
			}
		}
	}
	sc.Resilience = resilience.Figures(&sc.Series, sc.Goodput.SLOms, opts)
}
