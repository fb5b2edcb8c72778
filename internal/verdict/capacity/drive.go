package capacity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/result"
)

// ErrUsage marks settings a search cannot run with (test with errors.Is).
var ErrUsage = errors.New("capacity usage")

// ErrInconclusive is Run's error when the search could not find a
// capacity it can vouch for (Capacity.Inconclusive says why); the result
// is complete and written. spate capacity exits 4 on it.
var ErrInconclusive = errors.New("capacity search inconclusive")

type usageError struct{ err error }

func (e usageError) Error() string        { return e.err.Error() }
func (e usageError) Unwrap() error        { return e.err }
func (e usageError) Is(target error) bool { return target == ErrUsage }

// RunFunc runs one trial's experiment and returns its result; failed
// thresholds are not an error (they are in the result).
type RunFunc func(ctx context.Context, x *experiment.Experiment) (*result.Result, error)

// RunConfig is a capacity search over an experiment's trials (the flags
// of spate capacity).
type RunConfig struct {
	// Method is adaptive (Search) or sweep (Sweep).
	Method   string
	Criteria Criteria
	// MinRate, MaxRate, Resolution and MaxTrials bound the adaptive
	// search (see Config).
	MinRate, MaxRate, Resolution float64
	MaxTrials                    int
	// Repeats is the number of trials per rate.
	Repeats int
	// Confirm is the least number of trials at each end of the final
	// bracket, which the search decides by repeating their trials (0: as
	// many as the decision needs; see Config.Confirm).
	Confirm int
	// SweepConcurrency and SweepSteps shape a sweep (see SweepConfig).
	SweepConcurrency int
	SweepSteps       []float64
	// TrialDuration is each trial's measured duration (after warm-up).
	TrialDuration time.Duration
	// Out, when set, receives a line per trial and the summary.
	Out io.Writer
}

// Check reports settings a search cannot run with, naming the flag.
func (c RunConfig) Check() error {
	var err error
	switch {
	case c.Method != "adaptive" && c.Method != "sweep":
		err = fmt.Errorf("--method %q: use adaptive or sweep", c.Method)
	case c.Criteria.Goodput <= 0 || c.Criteria.Goodput > 1:
		err = fmt.Errorf("--goodput %v: want a fraction in (0, 1]", c.Criteria.Goodput)
	case c.MinRate <= 0 || c.MaxRate < c.MinRate:
		err = fmt.Errorf("--min-rate %v, --max-rate %v: want 0 < min ≤ max", c.MinRate, c.MaxRate)
	case c.Resolution <= 0 || c.Resolution >= 1:
		err = fmt.Errorf("--resolution %v: want a fraction in (0, 1)", c.Resolution)
	case c.TrialDuration <= 0:
		err = fmt.Errorf("--trial-duration %v: must be positive", c.TrialDuration)
	case c.Repeats < 1 || c.MaxTrials < 1 || c.SweepConcurrency < 1:
		err = errors.New("--repeats, --max-trials and --sweep-concurrency must be at least 1")
	case c.Confirm < 0:
		err = fmt.Errorf("--confirm %d: want 0 or more trials", c.Confirm)
	}
	if err != nil {
		return usageError{err}
	}
	return nil
}

// Run searches for the highest rate the experiment's target serves within
// its SLOs. Trial N runs a copy of exp whose every stage sends the trial's
// load (an open-loop rate or a closed-loop concurrency) for TrialDuration,
// seeded with exp's seed + N − 1 so that trials send different prompts and
// a prefix cache does not carry one into the next. The result has one
// scenario per trial and the search's outcome under Capacity; it is
// written to exp.Outputs.Result when that is set. A search stopped by an
// error returns the trials so far, marked interrupted, with the error.
func Run(ctx context.Context, exp *experiment.Experiment, cfg RunConfig, run RunFunc) (*result.Result, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	seed := uint64(1)
	if exp.Workload.Seed != nil {
		seed = *exp.Workload.Seed
	}
	crit := cfg.Criteria
	if len(exp.Stages) > 0 {
		crit.Warmup = exp.Stages[0].Warmup
	}
	crit.Duration = cfg.TrialDuration
	confirm := cfg.Confirm
	onTrial := func(n int, l Load, sc *result.Scenario, a Assessment) {
		_ = WriteTrial(out, n, l, sc, a)
	}
	var first *result.Result
	hists := map[int]map[string]string{}
	n := 0
	trial := func(ctx context.Context, l Load) (*result.Scenario, error) {
		n++
		x := *exp
		x.Stages = append([]experiment.Stage(nil), exp.Stages...)
		for i := range x.Stages {
			s := &x.Stages[i]
			if l.Concurrency > 0 {
				s.Concurrency, s.Rate, s.MaxConcurrency = l.Concurrency, 0, 0
			} else {
				s.Rate, s.Concurrency = l.Rate, 0
			}
			// The trial offers its rate from the first second to the last:
			// a ramp, a token rate, bursts or complexity shaping would
			// offer another, and the capacity would name a rate never sent.
			s.RampFrom, s.TokenRate, s.Stampede, s.ComplexityShaping, s.Requests = 0, 0, "", false, 0
			s.Duration = cfg.TrialDuration
		}
		x.Workload.Seed = new(seed + uint64(n-1))
		x.Outputs.Result, x.Outputs.Records, x.Outputs.Quiet = "", "", true
		res, err := run(ctx, &x)
		if res == nil || err != nil {
			if err == nil {
				err = errors.New("the trial returned no result")
			}
			return nil, err
		}
		if len(res.Scenarios) != 1 {
			return nil, usageError{fmt.Errorf("spate capacity needs one stage a trial, the experiment has %d: use a single-stage experiment", len(res.Scenarios))}
		}
		if first == nil {
			first = res
		}
		sc := res.Scenarios[0]
		// Histograms are keyed by scenario name, which the search sets:
		// remember them by trial number.
		hists[n] = res.Histograms[sc.Name]
		return &sc, nil
	}
	var o *Outcome
	var err error
	if cfg.Method == "sweep" {
		o, err = Sweep(ctx, trial, SweepConfig{Criteria: crit, Concurrency: cfg.SweepConcurrency, Steps: cfg.SweepSteps, Repeats: cfg.Repeats,
			Confirm: confirm, OnTrial: onTrial})
	} else {
		o, err = Search(ctx, trial, Config{Criteria: crit, MinRate: cfg.MinRate, MaxRate: cfg.MaxRate,
			Resolution: cfg.Resolution, Repeats: cfg.Repeats, MaxTrials: cfg.MaxTrials, Confirm: confirm, OnTrial: onTrial})
	}
	if o == nil {
		if errors.Is(err, ErrUsage) {
			return nil, err
		}
		return nil, usageError{err}
	}
	if first == nil {
		return nil, err
	}
	res := *first
	res.Scenarios, res.Histograms = o.Scenarios, map[string]map[string]string{}
	for i, sc := range o.Scenarios {
		res.Histograms[sc.Name] = hists[i+1]
	}
	res.Config.Rate, res.Config.Concurrency, res.Config.Duration = 0, 0, cfg.TrialDuration.String()
	res.ThresholdsPassed = true
	for _, sc := range o.Scenarios {
		for _, t := range sc.Thresholds {
			res.ThresholdsPassed = res.ThresholdsPassed && t.Pass
		}
	}
	o.Capacity.SLOms = o.Scenarios[0].Goodput.SLOms
	res.Capacity = o.Capacity
	res.EndedAt = time.Now().UTC()
	if err != nil {
		res.Interrupted = true
		res.Warnings = append(res.Warnings, "capacity search stopped: "+err.Error())
	}
	// The search's verdict, not its first trial's.
	switch {
	case res.Interrupted:
		res.Verdict = experiment.VerdictError
	case res.Capacity.Inconclusive != "":
		res.Verdict = experiment.VerdictInvalid
	default:
		res.Verdict = experiment.VerdictPass
	}
	if p := exp.Outputs.Result; p != "" {
		if werr := result.Write(p, &res); werr != nil {
			return &res, werr
		}
	}
	fmt.Fprintln(out)
	if p := exp.Outputs.Result; p != "" {
		fmt.Fprintf(out, "result written to %s\n", p)
	}
	_ = WriteSummary(out, res.Capacity)
	if err == nil && res.Capacity.Inconclusive != "" {
		err = ErrInconclusive
	}
	return &res, err
}
