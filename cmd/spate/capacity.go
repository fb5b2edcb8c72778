package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spate-dev/spate/internal/verdict/capacity"
	"github.com/spate-dev/spate/result"
)

func init() { commands = append(commands, newCapacityCmd) }

// capacityFlags are spate capacity's own flags; the rest are spate run's.
type capacityFlags struct {
	method           string
	goodput          float64
	minRate, maxRate float64
	resolution       float64
	repeats          int
	maxTrials        int
	trialDuration    time.Duration
	sweepConc        int
	sweepSteps       []float64
	minDelivered     float64
}

// capacityOwnLoad are spate run flags that set the load, which capacity
// sets itself for each trial.
var capacityOwnLoad = []string{"rate", "concurrency", "ramp-from", "duration", "requests", "records"}

func newCapacityCmd() *cobra.Command {
	f := &capacityFlags{}
	runFS := newRunCmd().Flags()
	c := &cobra.Command{
		Use:   "capacity [EXPERIMENT.yaml]",
		Short: "Find the highest rate the target serves within its SLOs, as an interval",
		Long: `Run trials of open-loop load at chosen rates and find the highest rate at which
the goodput fraction (requests that succeeded within every --slo) stays at or
above --goodput, with the measurement valid, the rate delivered (≥ 90 % of it)
and TTFT not growing through the trial (a queue without bound).

--method adaptive (default) doubles the rate from --min-rate until a rate
fails or --max-rate passes, then bisects until the interval [highest passing,
lowest failing] is narrower than --resolution (relative). It never goes above
a rate that failed, so a saturated server is not pushed further.
--method sweep measures the closed-loop throughput at --sweep-concurrency,
then steps open-loop rates up to it (--sweep-steps, fractions of it).

Every other flag is spate run's and applies to each trial (target, model,
workload, --slo, --warmup, ...); trial N uses --seed + N − 1, so that trials
send different prompts and a prefix cache does not carry one into the next. The result file (--out) has one scenario per
trial and the search's outcome under "capacity".`,
		Example: `  spate capacity --target http://127.0.0.1:8000/v1 --slo ttft=500ms,tpot=50ms --goodput 0.95 \
    --min-rate 1 --max-rate 64 --trial-duration 20s --resolution 0.05`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runCapacity(cmd, f, runFS, args) },
	}
	fl := c.Flags()
	fl.StringVar(&f.method, "method", "adaptive", "adaptive (exponential search, then bisection) or sweep")
	fl.Float64Var(&f.goodput, "goodput", 0.95, "goodput fraction a rate must reach to pass")
	fl.Float64Var(&f.minRate, "min-rate", 1, "adaptive: first rate tried, req/s")
	fl.Float64Var(&f.maxRate, "max-rate", 1000, "adaptive: highest rate tried, req/s")
	fl.Float64Var(&f.resolution, "resolution", 0.05, "adaptive: stop when (lowest failing − highest passing)/lowest failing is at most this")
	fl.IntVar(&f.repeats, "repeats", 1, "trials per rate; a rate passes when most of them do")
	fl.IntVar(&f.maxTrials, "max-trials", 40, "adaptive: most trials to run")
	fl.DurationVar(&f.trialDuration, "trial-duration", 10*time.Second, "measured duration of each trial (after --warmup)")
	fl.IntVar(&f.sweepConc, "sweep-concurrency", 16, "sweep: closed-loop concurrency whose throughput tops the sweep")
	fl.Float64SliceVar(&f.sweepSteps, "sweep-steps", capacity.DefaultSteps, "sweep: open-loop rates as fractions of the closed-loop throughput")
	fl.Float64Var(&f.minDelivered, "min-delivered", 0.9, "a trial whose achieved rate is under this fraction of the rate asked for fails (saturation)")
	runFS.VisitAll(func(fg *pflag.Flag) {
		if fl.Lookup(fg.Name) == nil {
			fl.AddFlag(fg)
		}
	})
	if out := fl.Lookup("out"); out != nil {
		out.DefValue = "spate-results/capacity.json"
		_ = out.Value.Set(out.DefValue)
		out.Usage = "result file to write: one scenario per trial and the capacity"
	}
	return c
}

func runCapacity(cmd *cobra.Command, f *capacityFlags, runFS *pflag.FlagSet, args []string) error {
	fl := cmd.Flags()
	for _, name := range capacityOwnLoad {
		if fl.Changed(name) {
			return usageErr("--%s: spate capacity sets each trial's load itself (use --min-rate/--max-rate, --trial-duration, --sweep-concurrency)", name)
		}
	}
	switch {
	case f.method != "adaptive" && f.method != "sweep":
		return usageErr("--method %q: use adaptive or sweep", f.method)
	case f.goodput <= 0 || f.goodput > 1:
		return usageErr("--goodput %v: want a fraction in (0, 1]", f.goodput)
	case f.minRate <= 0 || f.maxRate < f.minRate:
		return usageErr("--min-rate %v, --max-rate %v: want 0 < min ≤ max", f.minRate, f.maxRate)
	case f.resolution <= 0 || f.resolution >= 1:
		return usageErr("--resolution %v: want a fraction in (0, 1)", f.resolution)
	case f.trialDuration <= 0:
		return usageErr("--trial-duration %v: must be positive", f.trialDuration)
	case f.repeats < 1 || f.maxTrials < 1 || f.sweepConc < 1:
		return usageErr("--repeats, --max-trials and --sweep-concurrency must be at least 1")
	}
	// The run flags given, passed on to every trial.
	var pass []string
	pass = append(pass, args...)
	fl.Visit(func(fg *pflag.Flag) {
		if runFS.Lookup(fg.Name) == nil || fg.Name == "out" || fg.Name == "quiet" || fg.Name == "seed" {
			return
		}
		if sv, ok := fg.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				pass = append(pass, "--"+fg.Name+"="+v)
			}
			return
		}
		pass = append(pass, "--"+fg.Name+"="+fg.Value.String())
	})
	out := fl.Lookup("out").Value.String()
	seed, _ := fl.GetUint64("seed")
	quiet, _ := fl.GetBool("quiet")
	if fl.Lookup("slo").Value.String() == "" && len(args) == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "spate capacity: no --slo: goodput counts every successful request")
	}
	dir, err := os.MkdirTemp("", "spate-capacity-")
	if err != nil {
		return fmt.Errorf("creating a directory for trial results: %w", err)
	}
	defer os.RemoveAll(dir)

	crit := capacity.Criteria{Goodput: f.goodput, MinDelivered: f.minDelivered}
	var first *result.Result
	hists := map[string]map[string]string{}
	stdout := cmd.OutOrStdout()
	if quiet {
		stdout = io.Discard
	}
	n := 0
	trial := func(ctx context.Context, l capacity.Load) (*result.Scenario, error) {
		n++
		path := filepath.Join(dir, fmt.Sprintf("trial-%02d.json", n))
		targs := append([]string{}, pass...)
		if l.Concurrency > 0 {
			targs = append(targs, "--concurrency", strconv.Itoa(l.Concurrency))
		} else {
			targs = append(targs, "--rate", strconv.FormatFloat(l.Rate, 'g', -1, 64))
		}
		// Each trial sends fresh prompts (seed + trial number), so that a
		// server's prefix cache does not carry one trial into the next.
		targs = append(targs, "--duration", f.trialDuration.String(), "--out", path, "--quiet",
			"--seed", strconv.FormatUint(seed+uint64(n-1), 10))
		run := newRunCmd()
		run.SetArgs(targs)
		run.SetOut(io.Discard)
		run.SetErr(cmd.ErrOrStderr())
		run.SilenceErrors, run.SilenceUsage = true, true
		runErr := run.ExecuteContext(ctx)
		var ee *exitErr
		if runErr != nil && !(errors.As(runErr, &ee) && ee.code == exitThreshold) {
			return nil, runErr
		}
		res, err := result.Read(path)
		if err != nil {
			return nil, err
		}
		if len(res.Scenarios) != 1 {
			return nil, usageErr("spate capacity needs one stage a trial, the experiment has %d: use a single-stage experiment", len(res.Scenarios))
		}
		if first == nil {
			first = res
		}
		sc := res.Scenarios[0]
		if err := capacity.WriteTrial(stdout, n, l, &sc, crit); err != nil {
			return nil, err
		}
		// Histograms are keyed by scenario name, which the search sets:
		// remember them by trial number.
		hists[strconv.Itoa(n)] = res.Histograms[sc.Name]
		return &sc, nil
	}
	var o *capacity.Outcome
	if f.method == "sweep" {
		o, err = capacity.Sweep(cmd.Context(), trial, capacity.SweepConfig{Criteria: crit, Concurrency: f.sweepConc, Steps: f.sweepSteps, Repeats: f.repeats})
	} else {
		o, err = capacity.Search(cmd.Context(), trial, capacity.Config{Criteria: crit, MinRate: f.minRate, MaxRate: f.maxRate,
			Resolution: f.resolution, Repeats: f.repeats, MaxTrials: f.maxTrials})
	}
	if o == nil {
		return usageErr("%v", err)
	}
	if first == nil {
		return err
	}
	res := *first
	res.Scenarios, res.Histograms = o.Scenarios, map[string]map[string]string{}
	for i, sc := range o.Scenarios {
		res.Histograms[sc.Name] = hists[strconv.Itoa(i+1)]
	}
	res.Config.Rate, res.Config.Concurrency, res.Config.Duration = 0, 0, f.trialDuration.String()
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
	if out != "" {
		if werr := result.Write(out, &res); werr != nil {
			return werr
		}
	}
	printCapacity(stdout, o.Capacity, out)
	return err
}

func printCapacity(w io.Writer, c *result.Capacity, out string) {
	fmt.Fprintln(w)
	_ = capacity.WriteSummary(w, c)
	if out != "" {
		fmt.Fprintf(w, "result written to %s\n", out)
	}
}
