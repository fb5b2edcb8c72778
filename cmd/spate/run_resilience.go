package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/verdict/resilience"
	"github.com/spate-dev/spate/result"
)

func init() {
	runExtensions = append(runExtensions, func() runExtension { return &resilienceExt{} })
}

// resilienceExt adds the resilience figures (slope, recovery time; issue
// 8) to every stage of spate run whose series is long enough.
type resilienceExt struct {
	on                     bool
	slopeWindow, recWindow time.Duration
}

func (x *resilienceExt) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&x.on, "resilience", true, "compute resilience figures (P99 slope, recovery time after a load step or faults) for each stage")
	fs.DurationVar(&x.slopeWindow, "resilience-window", resilience.DefaultSlopeWindow*time.Second, "sliding window of the resilience slope (whole seconds, ≥ 2s)")
	fs.DurationVar(&x.recWindow, "recovery-window", resilience.DefaultRecoveryWindow*time.Second, "window of the windowed P99 that recovery time is measured on (whole seconds)")
}

func (x *resilienceExt) before(*cobra.Command, *runFlags) (func(), error) {
	if x.slopeWindow < 2*time.Second || x.slopeWindow%time.Second != 0 {
		return nil, usageErr("--resilience-window %v: want whole seconds, at least 2s", x.slopeWindow)
	}
	if x.recWindow < time.Second || x.recWindow%time.Second != 0 {
		return nil, usageErr("--recovery-window %v: want whole seconds, at least 1s", x.recWindow)
	}
	return nil, nil
}

func (x *resilienceExt) after(_ *cobra.Command, _ *runFlags, p *runner.Plan) error {
	if x.on {
		p.Observers = append(p.Observers, &resilienceObserver{opts: resilience.Options{
			SlopeWindow: int(x.slopeWindow / time.Second), RecoveryWindow: int(x.recWindow / time.Second),
		}})
	}
	return nil
}

func (x *resilienceExt) finish(*cobra.Command, *runFlags, *result.Result, string) error { return nil }

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
// stage (sc.Chaos, filled by the chaos observer, which runs first: its
// extension's file sorts before this one) add a recovery from each end.
func (o *resilienceObserver) StageEnd(st runner.Stage, sc *result.Scenario) {
	opts := o.opts
	opts.AfterFaults = o.prevFaults
	o.prevFaults = st.Faults != nil
	if sc.Chaos != nil {
		secs := float64(len(sc.Series.SentPerS))
		for _, w := range sc.Chaos.Windows {
			if w.EndS > 0 && w.EndS+1 < secs {
				opts.FaultEnds = append(opts.FaultEnds, w.EndS)
			}
		}
	}
	sc.Resilience = resilience.Figures(&sc.Series, sc.Goodput.SLOms, opts)
}
