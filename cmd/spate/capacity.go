package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate"
	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/verdict/capacity"
	"github.com/spate-dev/spate/result"
)

// capacityOwnLoad are spate run flags that set the load, which capacity
// sets itself for each trial.
var capacityOwnLoad = []string{"rate", "concurrency", "ramp-from", "duration", "requests", "records"}

func newCapacityCmd() *cobra.Command {
	f := &capacity.RunConfig{}
	var rf *runFlags
	c := &cobra.Command{
		Use:     "capacity [EXPERIMENT.yaml]",
		Short:   "Find the highest rate the target serves within its SLOs, as an interval",
		Long:    help("capacity"),
		Example: help("capacity.example"),
		Args:    cobra.MaximumNArgs(1),
		RunE:    func(cmd *cobra.Command, args []string) error { return runCapacity(cmd, f, rf, args) },
	}
	fl := c.Flags()
	fl.StringVar(&f.Method, "method", "adaptive", "adaptive (exponential search, then bisection) or sweep")
	fl.Float64Var(&f.Criteria.Goodput, "goodput", 0.95, "goodput fraction a rate must reach to pass")
	fl.Float64Var(&f.MinRate, "min-rate", 1, "adaptive: first rate tried, req/s")
	fl.Float64Var(&f.MaxRate, "max-rate", 1000, "adaptive: highest rate tried, req/s")
	fl.Float64Var(&f.Resolution, "resolution", 0.05, "adaptive: stop when (lowest failing − highest passing)/lowest failing is at most this")
	fl.IntVar(&f.Repeats, "repeats", 1, "trials per rate; a rate passes when most of them do")
	fl.IntVar(&f.Confirm, "confirm", capacity.DefaultConfirm, "least trials at each end of the final bracket, whose pass or failure is decided by repeating trials (the decision needs 3 that agree; 0: as many as it needs)")
	fl.IntVar(&f.MaxTrials, "max-trials", 40, "adaptive: most trials to run")
	fl.DurationVar(&f.TrialDuration, "trial-duration", 10*time.Second, "measured duration of each trial (after --warmup)")
	fl.IntVar(&f.SweepConcurrency, "sweep-concurrency", 16, "sweep: closed-loop concurrency whose throughput tops the sweep")
	fl.Float64SliceVar(&f.SweepSteps, "sweep-steps", capacity.DefaultSteps, "sweep: open-loop rates as fractions of the closed-loop throughput")
	// The default shown as the flag takes it, 0.2,0.4,..., not [0.200000,...].
	fl.Lookup("sweep-steps").DefValue = strings.Trim(strings.Join(strings.Fields(fmt.Sprint(capacity.DefaultSteps)), ","), "[]")
	fl.Float64Var(&f.Criteria.MinDelivered, "min-delivered", capacity.DefaultMinDelivered, "a trial fails when the server completes, successfully, under this fraction of the requests sent while the load runs")
	rf = addRunFlags(c, "spate-results/capacity.json")
	fl.Lookup("out").Usage = "result file to write: one scenario per trial and the capacity"
	return c
}

func runCapacity(cmd *cobra.Command, cfg *capacity.RunConfig, rf *runFlags, args []string) error {
	for _, name := range capacityOwnLoad {
		if cmd.Flags().Changed(name) {
			return usageErr("--%s: spate capacity sets each trial's load itself (use --min-rate/--max-rate, --trial-duration, --sweep-concurrency)", name)
		}
	}
	if err := cfg.Check(); err != nil {
		return err
	}
	x, err := rf.experiment(cmd, args)
	if err != nil {
		return err
	}
	if len(x.SLO) == 0 && len(args) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "spate capacity: no --slo: goodput counts every successful request")
	}
	cfg.Out = cmd.OutOrStdout()
	if x.Outputs.Quiet {
		cfg.Out = io.Discard
	}
	_, err = capacity.Run(cmd.Context(), x, *cfg, func(ctx context.Context, x *experiment.Experiment) (*result.Result, error) {
		res, err := spate.Run(ctx, x, spate.WithStderr(cmd.ErrOrStderr()))
		if errors.Is(err, spate.ErrThresholdsFailed) || errors.Is(err, spate.ErrNoneSucceeded) || errors.Is(err, spate.ErrUntrustworthy) {
			err = nil // the trial's figures judge it
		}
		return res, err
	})
	if errors.Is(err, capacity.ErrInconclusive) {
		// The summary's last line says why; the result is written.
		return &exitErr{code: exitInvalid, err: err}
	}
	return err
}
