package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/internal/verdict/compare"
)

// compareFlags are the flags of spate compare.
type compareFlags struct {
	base, nw, baseRef, newRef []string
	alpha                     float64
	window, settle            time.Duration
	metrics, gate, minEffect  []string
	format                    string
	force, allowInvalid       bool
	seed                      uint64
	minRuns                   int
}

func newCompareCmd() *cobra.Command {
	f := &compareFlags{}
	c := &cobra.Command{
		Use:     "compare BASE.json NEW.json | BASE.json... -- NEW.json... | --base A.json... --new B.json...",
		Short:   "Judge new results against base ones: change, interval and verdict per metric",
		Long:    help("compare", strings.Join(compare.DefaultGate, ", ")),
		Example: help("compare.example"),
		RunE:    func(cmd *cobra.Command, args []string) error { return runCompare(cmd, f, args, cmd.ArgsLenAtDash()) },
	}
	fl := c.Flags()
	fl.StringArrayVar(&f.base, "base", nil, "base result file or glob (repeatable)")
	fl.StringArrayVar(&f.nw, "new", nil, "new result file or glob (repeatable)")
	fl.StringArrayVar(&f.baseRef, "base-ref", nil, "reference workload run in the base's environment (file or glob, repeatable)")
	fl.StringArrayVar(&f.newRef, "new-ref", nil, "reference workload run in the new side's environment (file or glob, repeatable)")
	fl.Float64Var(&f.alpha, "alpha", 0.01, "significance level; intervals are at 1−alpha; the gated rows' family-wise false-alarm rate (Holm–Bonferroni)")
	fl.DurationVar(&f.window, "window", 0, "window of the per-second series the tests run on, whole seconds (default: chosen per stage from the runs' length)")
	fl.DurationVar(&f.settle, "settle", time.Second, "seconds left out after each stage's warm-up")
	fl.StringSliceVar(&f.metrics, "metric", nil, "metrics to compare (default all): "+metricList())
	fl.StringSliceVar(&f.gate, "gate", nil, "metrics whose regression exits 3 (default "+strings.Join(compare.DefaultGate, ",")+"; 'none' for none)")
	fl.StringVar(&f.format, "format", "table", "output: table, markdown or json")
	fl.StringSliceVar(&f.minEffect, "min-effect", nil, "practical margin per metric, METRIC=MARGIN: 10% (relative), 1pp (fractions) or a number in the unit (default 5% latencies and rates, 1pp error_rate and goodput)")
	fl.BoolVar(&f.force, "force", false, "compare results whose fingerprints differ")
	fl.BoolVar(&f.allowInvalid, "allow-invalid", false, "judge stages whose measurement was not valid instead of exiting 4")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the bootstrap")
	fl.IntVar(&f.minRuns, "min-runs", 0, "runs per side from which whole runs are compared with the U test (default: the fewest that can reach alpha)")
	return c
}

func metricList() string {
	var names []string
	for _, m := range compare.Metrics {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}

// runCompare runs spate compare; dash is where "--" splits the positional
// results into base and new ones (-1 when not given).
func runCompare(cmd *cobra.Command, f *compareFlags, args []string, dash int) error {
	if !slices.Contains(compare.Formats, f.format) {
		return usageErr("--format %q: use %s", f.format, strings.Join(compare.Formats, ", "))
	}
	if f.alpha <= 0 || f.alpha >= 0.5 {
		return usageErr("--alpha %v: want a level between 0 and 0.5, e.g. 0.01", f.alpha)
	}
	if f.window != 0 && (f.window < time.Second || f.window%time.Second != 0) {
		return usageErr("--window %v: want whole seconds, at least 1s (or leave it out to choose it from the runs' length)", f.window)
	}
	minEffect, err := compare.ParseMinEffect(f.minEffect)
	if err != nil {
		return usageErr("%v", err)
	}
	gate, err := compare.ParseGate(f.gate, cmd.Flags().Changed("gate"))
	if err != nil {
		return usageErr("%v", err)
	}
	if f.settle < 0 {
		return usageErr("--settle %v: must not be negative", f.settle)
	}
	base, nw := f.base, f.nw
	switch {
	case dash > 0 && dash < len(args) && len(base) == 0 && len(nw) == 0:
		base, nw = args[:dash], args[dash:]
	case dash < 0 && len(args) == 2 && len(base) == 0 && len(nw) == 0:
		base, nw = args[:1], args[1:]
	case len(args) == 0 && len(base) > 0 && len(nw) > 0:
	default:
		return usageErr("give BASE.json NEW.json, BASE.json... -- NEW.json..., or --base and --new (each repeatable, globs allowed), not both")
	}
	if (len(f.baseRef) == 0) != (len(f.newRef) == 0) {
		return usageErr("--base-ref and --new-ref go together")
	}
	s, err := compare.ReadSides(cmd.Context(), base, nw, f.baseRef, f.newRef)
	if err != nil {
		return err
	}
	cfg := compare.Config{Alpha: f.alpha, Window: int(f.window / time.Second), Settle: int(f.settle / time.Second),
		Metrics: f.metrics, Gate: gate, Seed: f.seed, MinRuns: f.minRuns, Force: f.force,
		MinEffect: minEffect, AllowInvalid: f.allowInvalid}
	if f.settle == 0 {
		cfg.Settle = -1
	}
	rep, err := compare.Compare(s, cfg)
	if err != nil {
		var me *compare.MismatchError
		if errors.As(err, &me) {
			return err
		}
		return usageErr("%v", err)
	}
	if err := compare.Write(cmd.OutOrStdout(), rep, f.format); err != nil {
		return err
	}
	if len(rep.Regressed) > 0 {
		return &exitErr{code: exitThreshold, err: fmt.Errorf("regressed: %s", strings.Join(rep.Regressed, ", "))}
	}
	if rep.Inconclusive != "" {
		// The last line of the output says why.
		return &exitErr{code: exitInvalid, err: fmt.Errorf("inconclusive: %s", rep.Inconclusive)}
	}
	return nil
}
