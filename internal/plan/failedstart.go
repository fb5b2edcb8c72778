package plan

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/internal/verdict/gate"
	"github.com/spate-dev/spate/result"
)

// startFailed handles a run that could not start for a reason other than
// its settings (the target unreachable, a file that cannot be read): it
// writes a result that holds the error and nothing measured, runs the
// gate's error actions, and returns that result with err. A pipeline that
// gates on the result file or on its error action hears of the failure.
func startFailed(ctx context.Context, x *experiment.Experiment, env Env, err error) (*result.Result, error) {
	var oe outputError
	if errors.Is(err, ErrInvalid) || errors.As(err, &oe) {
		return nil, err
	}
	red := redactor(x)
	err = red.Error(err) // the key, header values and URL secrets masked
	now := time.Now().UTC()
	res := &result.Result{
		Schema: result.Schema, SpateVersion: env.Version, StartedAt: now, EndedAt: now,
		Provenance: result.Provenance{Model: x.Target.Model, SUTVersion: x.SUT.Version, Target: scrub.URL(x.Target.URL),
			API: x.Target.API, ExperimentSHA256: x.SHA256},
		Config:     result.Config{Experiment: x.Path, Workload: x.WorkloadFile},
		Scenarios:  []result.Scenario{},
		Histograms: map[string]map[string]string{},
		Error:      "the run could not start: " + err.Error(),
	}
	r := &Run{X: x, env: env}
	out := x.Outputs.Result
	write := func() error {
		if out == "" {
			return nil
		}
		redactResult(red, res)
		return result.Write(out, res)
	}
	if werr := write(); werr != nil {
		return res, errors.Join(err, werr)
	}
	if !r.quiet() && out != "" {
		fmt.Fprintf(r.stderr(), "result (with the error) written to %s\n", out)
	}
	if len(x.Actions) == 0 {
		return res, err
	}
	verdict := gate.Verdict(res, err)
	outs := gate.Run(context.WithoutCancel(ctx), x.Actions[verdict], gate.Payload{
		Verdict: verdict, Experiment: x.Path, Result: out,
	})
	r.recordGate(res, verdict, outs)
	if werr := write(); werr != nil {
		return res, errors.Join(err, werr)
	}
	return res, err
}
