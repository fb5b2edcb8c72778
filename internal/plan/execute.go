package plan

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/output/report"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/verdict"
	"github.com/spate-dev/spate/internal/verdict/gate"
	"github.com/spate-dev/spate/result"
)

// Execute builds a run from e (Build), runs it and closes it: see
// (*Run).Execute.
func Execute(ctx context.Context, e *experiment.Experiment, env Env) (*result.Result, error) {
	r, err := Build(ctx, e, env)
	if err != nil {
		if errors.Is(err, ErrInvalid) {
			return nil, err
		}
		return startFailed(ctx, withDefaults(e), env, err)
	}
	defer r.Close()
	return r.Execute(ctx)
}

// Execute runs the plan, prints the summary, writes the result and the
// features' outputs, runs the gate actions its verdict maps to and returns
// the result with the run's outcome: nil, ErrThresholdsFailed or
// ErrUntrustworthy (the result is complete), or what went wrong. A result is returned whenever one was
// measured, even with an error.
func (r *Run) Execute(ctx context.Context) (_ *result.Result, err error) {
	defer func() { err = r.red.Error(err) }()
	x, p := r.X, r.Plan
	if x.Outputs.Records != "" {
		if err := os.MkdirAll(filepath.Dir(x.Outputs.Records), 0o755); err != nil {
			return nil, fmt.Errorf("opening --records file: %w", err)
		}
		f, err := os.Create(x.Outputs.Records)
		if err != nil {
			return nil, fmt.Errorf("opening --records file: %w", err)
		}
		defer f.Close()
		p.Records = f
	}
	settleHeap()
	res, runErr := runner.Run(ctx, p)
	if res == nil {
		if runErr == nil {
			return nil, nil
		}
		return startFailed(ctx, x, r.env, runErr)
	}
	redactResult(r.red, res)
	oerr := outcome(res, runErr, x.Measurement.AllowInvalid)
	res.Verdict = verdict.Of(res, runFailure(oerr))
	out := x.Outputs.Result
	if r.summary() {
		if err := report.Console(r.stdout(), res); err != nil {
			return res, err
		}
	}
	write := func() error {
		if out == "" {
			return nil
		}
		redactResult(r.red, res) // again: the gate's actions come after the first write
		return result.Write(out, res)
	}
	if err := write(); err != nil {
		return res, err
	}
	if r.summary() && out != "" {
		fmt.Fprintf(r.stdout(), "result written to %s\n", out)
	}
	// A failing output (a report that could not be written) is an error
	// but does not skip the gate's actions.
	var ferrs []error
	for _, f := range r.features {
		ferrs = append(ferrs, f.finish(r, res))
	}
	if err := errors.Join(ferrs...); err != nil {
		oerr = err
		if v := verdict.Of(res, err); v != res.Verdict {
			res.Verdict = v
			if err := write(); err != nil {
				return res, err
			}
		}
	}
	if len(x.Actions) == 0 {
		return res, oerr
	}
	outs := gate.Run(context.WithoutCancel(ctx), x.Actions[res.Verdict], gate.Payload{
		Verdict: res.Verdict, Experiment: x.Path, Fingerprint: res.Fingerprint, Result: out, Failed: gate.FailedThresholds(res),
		Unjudged: verdict.Unjudged(res),
	})
	failed := r.recordGate(res, res.Verdict, outs)
	if err := write(); err != nil {
		return res, err
	}
	if oerr == nil && failed > 0 {
		return res, fmt.Errorf("%d gate action(s) failed on verdict %s: see gate.actions in the result", failed, res.Verdict)
	}
	return res, oerr
}

// settleHeap returns to the system what building the run left behind
// (loading the tokenizer, building the workload) before the load starts,
// so that the run's resident memory is its steady heap, not the peak of
// its start (bench/mem.sh; docs/run.md).
func settleHeap() { debug.FreeOSMemory() }

// outcome is the error a finished run ends with: what stopped it, then
// whether it completed (interrupted, nothing succeeded), then its verdict
// (verdict.Outcome: failed thresholds win over an invalid measurement).
func outcome(res *result.Result, runErr error, allowInvalid bool) error {
	if runErr != nil {
		return runErr
	}
	if res.Interrupted {
		return errors.New("interrupted: partial result written")
	}
	// A stage in which no request completed is an error whatever the
	// reason (failures, requests cancelled at the end of the drain,
	// nothing sent): its figures measure nothing.
	var empty []string
	for _, sc := range res.Scenarios {
		if rq := sc.Requests; rq.Succeeded == 0 {
			empty = append(empty, fmt.Sprintf("stage %s (%d failed, %d cancelled at the end of the drain)", sc.Name, rq.Failed, rq.Cancelled))
		}
	}
	if len(empty) > 0 {
		return fmt.Errorf("%w in %s: see requests.errors in the result", ErrNoneSucceeded, strings.Join(empty, "; "))
	}
	return verdict.Outcome(res, allowInvalid)
}

// runFailure is err when it says the run could not complete, nil when it
// is the outcome of a completed run's verdict (failed thresholds, an
// invalid measurement).
func runFailure(err error) error {
	if errors.Is(err, ErrThresholdsFailed) || errors.Is(err, ErrUntrustworthy) {
		return nil
	}
	return err
}

// recordGate puts the verdict and how its actions went into the result,
// prints a line per action and returns how many failed.
func (r *Run) recordGate(res *result.Result, verdict string, outs []gate.Outcome) (failed int) {
	res.Gate = &result.Gate{Verdict: verdict, Actions: []result.GateAction{}}
	for _, o := range outs {
		res.Gate.Actions = append(res.Gate.Actions, result.GateAction{Action: o.Action, OK: o.OK, Error: o.Error, Output: o.Output, Seconds: o.Seconds})
		status := "ok"
		if !o.OK {
			status, failed = "FAILED: "+o.Error, failed+1
		}
		fmt.Fprintf(r.stderr(), "gate: verdict %s → %s %s (%.1f s)\n", verdict, o.Action, status, o.Seconds)
		if o.OK && o.Output != "" {
			fmt.Fprintf(r.stderr(), "  %s\n", strings.ReplaceAll(o.Output, "\n", "\n  "))
		}
	}
	return failed
}
