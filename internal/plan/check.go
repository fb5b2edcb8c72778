package plan

import (
	"context"

	"fmt"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/fdlimit"
	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/schedule"
	"github.com/spate-dev/spate/internal/verdict/threshold"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/internal/workload/tokenizer"
)

// Check reports, as an ErrInvalid, everything a run of e would refuse
// before it sends, without starting anything: the experiment's shape
// (experiment.Problems), lengths, SLOs, thresholds and arrivals (at their
// file:line:column when e was read from a file), then each feature's
// settings and the tokenizer. What only a run can tell (the target is
// reachable, a dataset reads) is left to Build; a missing target too, since
// a file may leave it to the command line.
func Check(e *experiment.Experiment) error { return CheckContext(context.Background(), e) }

// CheckContext is Check reading the files it checks (probe suites) under
// ctx: a FIFO among them cannot keep Ctrl-C from working.
func CheckContext(ctx context.Context, e *experiment.Experiment) error {
	x := withDefaults(e)
	ps := append(x.Problems(), problems(ctx, x)...)
	if err := x.Errors(ps); err != nil {
		return Invalid(err)
	}
	for _, f := range features() {
		if err := f.check(ctx, x); err != nil {
			return Invalid(err)
		}
	}
	if tokenizer.IsServer(x.Measurement.Tokenizer) {
		// The endpoint is found when the run starts.
		if err := tokenizer.CheckServerName(x.Measurement.Tokenizer); err != nil {
			return invalidf("--tokenizer: %v", err)
		}
		return nil
	}
	tok, err := tokenizer.LoadContext(ctx, x.Measurement.Tokenizer)
	if err != nil {
		return invalidf("--tokenizer: %v", err)
	}
	if tok.Name() != "cl100k_base" && x.Workload.Dataset == "" && x.Target.API != "http" {
		if err := workload.CheckVocab(tok, tok.Name()); err != nil {
			return invalidf("--tokenizer: %v", err)
		}
	}
	return nil
}

// problems are the checks of an experiment's values that need the
// parsers of the stages that read them: length distributions, SLOs,
// threshold expressions, arrivals and ramps.
func problems(ctx context.Context, x *experiment.Experiment) []experiment.Problem {
	var ps []experiment.Problem
	at := func(path, format string, a ...any) {
		ps = append(ps, experiment.Problem{Path: path, Message: fmt.Sprintf(format, a...)})
	}
	lengths := func(p string, w experiment.Workload) {
		for _, f := range []struct{ key, v string }{{"inputTokens", w.InputTokens}, {"outputTokens", w.OutputTokens}} {
			if f.v != "" {
				if _, err := workload.ParseLengthsContext(ctx, f.v); err != nil {
					at(p+"."+f.key, "%v", err)
				}
			}
		}
	}
	lengths("$.workload", x.Workload)
	promptProblems(ctx, x, at)
	faultSetProblems(x, at)
	for k, v := range x.SLO {
		if _, err := metrics.ParseSLO(k + "=" + v.String()); err != nil {
			at("$.slo."+k, "%v", err)
		}
	}
	fdProblems(x, at)
	var stages []runner.Stage
	names := map[string]bool{}
	for _, s := range x.Stages {
		// The loop matters to the checks: a closed loop has no intended
		// send time, so its thresholds by input length are judged.
		stages = append(stages, runner.Stage{Name: s.Name, Concurrency: s.Concurrency})
		names[s.Name] = true
	}
	for i, spec := range x.Thresholds {
		p := fmt.Sprintf("$.thresholds[%d]", i)
		if threshold.IsTrigger(spec.Expr) {
			tr, err := threshold.ParseTrigger(spec.Expr)
			if err != nil {
				at(p, "%v", err)
				continue
			}
			if err := runner.CheckThresholds(stages, []threshold.Threshold{{Expr: tr.Expr, Stage: tr.Stage}}, true); err != nil {
				at(p, "%v", err)
			}
			if err := runner.CheckTriggers([]runner.Trigger{{Trigger: tr, Delay: spec.Delay, Window: spec.Window}}); err != nil {
				at(p, "%v", err)
			}
			if spec.Window != 0 && spec.Window%time.Second != 0 {
				at(p, "trigger %q: the window is whole seconds (e.g. 10s)", tr.Expr)
			}
			// A stage shorter than the trigger's delay and for could
			// never fire it: no verdict (exit 4) after a whole run.
			for _, st := range x.Stages {
				if (tr.Stage == "" || tr.Stage == st.Name) && st.Duration > 0 && st.Requests == 0 && tr.Hold > 0 &&
					spec.Delay+tr.Hold >= st.Warmup+st.Duration {
					at(p, "trigger %q: stage %s sends load for %v, no longer than the trigger's for %v after its delay of %v: it could never fire there, and could not judge (limit it to the stages it fits with {stage:NAME}, or shorten its for)",
						tr.Expr, st.Name, st.Warmup+st.Duration, tr.Hold, spec.Delay)
				}
			}
			continue
		}
		t, err := threshold.Parse(spec.Expr)
		if err != nil {
			at(p, "%v", err)
			continue
		}
		if err := runner.CheckThresholds(stages, []threshold.Threshold{t}, x.Measurement.SLOFrom == SLOFromSent); err != nil {
			at(p, "%v", err)
		}
		if spec.AbortOnFail {
			if err := runner.CheckAborts([]runner.Abort{{Threshold: t}}); err != nil {
				at(p, "%v", err)
			}
		}
	}
	all, err := runStages(x)
	if err != nil {
		return ps
	}
	for i, s := range x.Stages {
		p := fmt.Sprintf("$.stages[%d]", i)
		if w := s.Workload; w != nil {
			lengths(p+".workload", *w)
		}
		trace := s.Arrival == "trace"
		loops := 0
		for _, set := range []bool{s.Rate > 0, s.Concurrency > 0, s.TokenRate > 0} {
			if set {
				loops++
			}
		}
		if !trace && loops != 1 || s.Rate < 0 || s.Concurrency < 0 || s.TokenRate < 0 {
			continue // experiment.Problems says so
		}
		if err := runner.CheckStage(all[i]); err != nil {
			at(p, "stage %q: %v", s.Name, err)
		}
		if s.Stampede != "" {
			if _, err := schedule.ParseStampede(s.Stampede); err != nil {
				at(p+".stampede", "stage %q: --stampede: %v", s.Name, err)
			}
			switch {
			case s.Concurrency > 0 || trace:
				at(p+".stampede", "stage %q: --stampede adds bursts to an open-loop rate, not to %s", s.Name, map[bool]string{true: "a trace", false: "a concurrency"}[trace])
			case s.ComplexityShaping:
				at(p+".stampede", "stage %q: --stampede and --complexity-shaping exclude each other", s.Name)
			}
		}
	}
	return ps
}

// fdProblems refuses a stage whose requests in flight (its closed loop's
// workers, its open loop's cap) need more file descriptors than this
// process may open: the run would fail on this machine (EMFILE), not at
// the target.
func fdProblems(x *experiment.Experiment, at func(path, format string, a ...any)) {
	lim, ok := fdlimit.Current()
	if !ok {
		return
	}
	for i, s := range x.Stages {
		p := fmt.Sprintf("$.stages[%d]", i)
		for _, f := range []struct {
			key, flag string
			n         int
		}{{"concurrency", "--concurrency", s.Concurrency}, {"maxConcurrency", "--max-concurrency", s.MaxConcurrency}} {
			if err := lim.Check(f.flag, f.n); err != nil {
				at(p+"."+f.key, "stage %q: %v", s.Name, err)
			}
		}
	}
}
