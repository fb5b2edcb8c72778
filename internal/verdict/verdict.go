// Package verdict decides what a finished run means to the pipeline that
// gates on it (docs/design.md §4): its verdict (pass, fail, invalid or
// error) and the error a run returns, which the command line maps to its
// exit code (0 success, 1 error, 2 usage, 3 thresholds failed, 4 no
// trustworthy verdict; 3 wins over 4).
//
// Stage: verdict.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package verdict

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/result"
)

// Verdicts, as recorded in result.Result.Verdict and as the keys of an
// experiment's actions.
const (
	Pass    = experiment.VerdictPass    // every threshold passed on a valid measurement
	Fail    = experiment.VerdictFail    // a threshold failed
	Invalid = experiment.VerdictInvalid // thresholds passed, but a stage's measurement was not valid
	Error   = experiment.VerdictError   // the run could not complete (interrupted, nothing succeeded, ...)
)

// ErrThresholdsFailed is the outcome of a completed run whose thresholds
// failed: the result is complete and written (exit 3).
var ErrThresholdsFailed = errors.New("thresholds failed")

// ErrUntrustworthy is the outcome of a completed run whose figures cannot
// be trusted: a measured stage was invalid (its thresholds passed, or it
// had none), or a comparison could not judge. The result is written; there
// is no trustworthy verdict (exit 4).
var ErrUntrustworthy = errors.New("no trustworthy verdict")

// Of is the verdict of a finished run; runErr is its own error (not the
// outcome of its thresholds), if any. Thresholds that could not be judged,
// with none failed, make it Invalid: no trustworthy verdict.
func Of(r *result.Result, runErr error) string {
	switch {
	case runErr != nil || r == nil || r.Interrupted:
		return Error
	case Failed(r):
		return Fail
	case !r.ThresholdsPassed || len(InvalidStages(r)) > 0:
		return Invalid
	}
	return Pass
}

// Failed says whether r's thresholds failed: one whose figure was
// measured missed its limit, the run was stopped by one (r.Aborted), or
// they did not pass and none says it could not be judged. Thresholds that
// could not be judged (Unjudged), with none failed, are not a failure.
func Failed(r *result.Result) bool {
	if r.ThresholdsPassed {
		return false
	}
	if r.Aborted != "" {
		return true
	}
	unjudged := false
	for _, sc := range r.Scenarios {
		for _, o := range sc.Thresholds {
			if !o.Pass && !o.Unjudged {
				return true
			}
			unjudged = unjudged || o.Unjudged
		}
	}
	return !unjudged
}

// Unjudged lists r's thresholds that could not be judged, with why:
// "stage main: msr >= 0.9 (msr was not measured in this run)".
func Unjudged(r *result.Result) []string {
	var out []string
	for _, sc := range r.Scenarios {
		for _, o := range sc.Thresholds {
			if o.Unjudged {
				out = append(out, fmt.Sprintf("stage %s: %s (%s)", sc.Name, o.Expr, o.Err))
			}
		}
	}
	return out
}

// CauseNotApplied is the invalid cause (result.Load.InvalidCause) of a
// stage whose load the chaos proxy never saw: the faults asked for reached
// nothing. No allowInvalid accepts it: the run did not measure what it was
// asked to (see Accepted).
const CauseNotApplied = "faults_not_applied"

// Accepted says whether allowInvalid accepts sc's measurement: a valid
// one always, an invalid one when allowInvalid is set, unless the stage
// did not measure what it was asked to (CauseNotApplied).
func Accepted(sc *result.Scenario, allowInvalid bool) bool {
	return sc.Load.Valid || (allowInvalid && sc.Load.InvalidCause != CauseNotApplied)
}

// InvalidStages are the measured stages of r whose measurement was not
// valid.
func InvalidStages(r *result.Result) []*result.Scenario {
	var out []*result.Scenario
	for i := range r.Scenarios {
		if !r.Scenarios[i].Load.Valid {
			out = append(out, &r.Scenarios[i])
		}
	}
	return out
}

// Outcome is the error a completed run (one that produced r without an
// error of its own) ends with: nil, ErrThresholdsFailed, or an
// ErrUntrustworthy naming the thresholds that could not be judged or the
// invalid stages allowInvalid does not accept (Accepted) and their causes.
// Failed thresholds win over both.
func Outcome(r *result.Result, allowInvalid bool) error {
	if Failed(r) {
		return ErrThresholdsFailed
	}
	if !r.ThresholdsPassed {
		// allowInvalid accepts an invalid measurement, never a threshold
		// with no figure to judge.
		return fmt.Errorf("%w: thresholds could not be judged: %s", ErrUntrustworthy, strings.Join(Unjudged(r), "; "))
	}
	var bad []*result.Scenario
	hint := "--allow-invalid accepts it"
	for _, sc := range InvalidStages(r) {
		if !Accepted(sc, allowInvalid) {
			bad = append(bad, sc)
		}
		if !Accepted(sc, true) {
			hint = "no --allow-invalid accepts " + CauseNotApplied
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s (see load.invalid_reason in the result; %s)", ErrUntrustworthy, Causes(bad), hint)
}

// Causes names invalid stages and their causes: "stage main: missed_sends".
func Causes(bad []*result.Scenario) string {
	parts := make([]string, len(bad))
	for i, sc := range bad {
		parts[i] = "stage " + sc.Name + ": " + sc.Load.InvalidCause
	}
	return strings.Join(parts, ", ")
}
