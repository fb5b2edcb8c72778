// Package spate is the Go API of spate, a load tester and benchmark for AI
// services: build an experiment (package experiment: the same model an
// experiment file or the command line fills), Run it, and read the result
// (package result). The built-in simulator (package sim) and the test
// servers of package llmtest give a run something to measure in tests.
//
//	exp := &experiment.Experiment{
//		Target: experiment.Target{URL: "http://127.0.0.1:8000/v1", Model: "m"},
//		Stages: []experiment.Stage{{Name: "main", Rate: 5, Duration: 30 * time.Second}},
//		Thresholds: []experiment.ThresholdSpec{{Expr: "p99(ttft) < 800ms"}},
//	}
//	res, err := spate.Run(ctx, exp)
//
// Data flows experiment → plan → workload → schedule → engine → client →
// record → metrics → verdict → outputs; the stages are internal packages
// (see docs/design.md).
package spate

import (
	"context"
	"errors"
	"io"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/interrupt"
	"github.com/spate-dev/spate/internal/plan"
	"github.com/spate-dev/spate/result"
)

// ErrInvalid is the error (test with errors.Is) of an experiment that
// cannot run as given: Validate's, and Run's when it refuses to start.
// spate exits 2 on it.
var ErrInvalid = plan.ErrInvalid

// ErrThresholdsFailed is Run's error when the run completed but a
// threshold failed; the result is complete and written. spate exits 3 on
// it.
var ErrThresholdsFailed = plan.ErrThresholdsFailed

// ErrNoneSucceeded is Run's error when a stage ended with no request
// succeeded, whatever the reason; the result is written. spate exits 1 on
// it.
var ErrNoneSucceeded = plan.ErrNoneSucceeded

// ErrUntrustworthy is Run's error when the run completed and its
// thresholds passed (or it had none) but a measured stage was invalid:
// spate could not offer the load it was asked for, so there is no
// trustworthy verdict. The result is complete and written; spate exits 4
// on it. measurement.allowInvalid makes such a run return nil.
var ErrUntrustworthy = plan.ErrUntrustworthy

// An Option changes how Run reports as it goes.
type Option func(*options)

// options are what the Options set: the run's surroundings.
type options struct{ env plan.Env }

// WithStdout prints the console summary, the features' tables and the
// notes on files written to w (by default nothing is printed).
func WithStdout(w io.Writer) Option { return func(o *options) { o.env.Stdout = w } }

// WithStderr prints progress, warnings and the gate's actions to w (by
// default nothing is printed).
func WithStderr(w io.Writer) Option { return func(o *options) { o.env.Stderr = w } }

// WithLiveProgress redraws progress in place on the WithStderr writer (an
// interactive terminal) instead of printing a line per interval.
func WithLiveProgress() Option { return func(o *options) { o.env.Live = true } }

// WithHurry stops a run's drain at once when c is closed after ctx was
// cancelled: the requests still in flight are recorded as cancelled and the
// partial result is written without waiting for them (the command line
// closes it on a second Ctrl-C).
func WithHurry(c <-chan struct{}) Option { return func(o *options) { o.env.Hurry = c } }

// WithoutSummary leaves out the console summary and the features' tables
// but keeps progress and the notes on files written.
func WithoutSummary() Option { return func(o *options) { o.env.NoSummary = true } }

// Run runs an experiment: it checks it (Validate), sends its stages in
// order to the target, measures them and returns the result, after writing
// it and the other outputs the experiment names (exp.Outputs; none by
// default) and running the gate actions its verdict maps to (exp.Actions).
//
// The error is nil, ErrThresholdsFailed, ErrUntrustworthy,
// ErrNoneSucceeded, an ErrInvalid, or what stopped the run (see ExitCode);
// a result is returned whenever one was measured, even with an error (an
// interrupted run's is partial: cancel ctx to stop a run). exp is not
// changed.
func Run(ctx context.Context, exp *experiment.Experiment, opts ...Option) (*result.Result, error) {
	o := options{env: plan.Env{Version: Version}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.env.Hurry == nil {
		o.env.Hurry = interrupt.Hurry(ctx) // the command line's second Ctrl-C
	}
	return plan.Execute(ctx, exp, o.env)
}

// Validate reports, as an ErrInvalid, everything a run of exp would refuse
// before it sends: the shape of the experiment, lengths, SLOs, thresholds,
// arrivals and each feature's settings, with file:line:column when exp was
// read from a file (experiment.Load). It starts nothing and sends nothing,
// so it cannot tell whether the target is reachable or a dataset reads; it
// does not require a target, which the command line may give.
func Validate(exp *experiment.Experiment) error { return plan.Check(exp) }

// Exit codes of a run (docs/design.md §4), as ExitCode maps Run's error.
const (
	ExitOK            = 0 // success: thresholds passed on a valid measurement
	ExitError         = 1 // the run could not complete: unreadable file, unreachable target, nothing succeeded, interrupted
	ExitUsage         = 2 // the experiment cannot run as given (ErrInvalid)
	ExitThresholds    = 3 // a threshold failed; the result is written (ErrThresholdsFailed)
	ExitUntrustworthy = 4 // no trustworthy verdict: a measured stage was invalid; the result is written (ErrUntrustworthy)
)

// ExitCode is the exit code of a run that returned err: 0 for nil, 3 for
// ErrThresholdsFailed (which wins over an invalid measurement: Run
// returns it then), 4 for ErrUntrustworthy, 2 for ErrInvalid, 1 for any
// other error.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrThresholdsFailed):
		return ExitThresholds
	case errors.Is(err, ErrUntrustworthy):
		return ExitUntrustworthy
	case errors.Is(err, ErrInvalid):
		return ExitUsage
	}
	return ExitError
}
