package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/internal/verdict/compare"
)

func newCompareCmd() *cobra.Command {
	f := &compare.Flags{}
	c := &cobra.Command{
		Use:     "compare BASE.json NEW.json | BASE.json... -- NEW.json... | --base A.json... --new B.json...",
		Short:   "Judge new results against base ones: change, interval and verdict per metric",
		Long:    help("compare", strings.Join(compare.DefaultGate, ", ")),
		Example: help("compare.example"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.GateGiven = cmd.Flags().Changed("gate")
			return runCompare(cmd, *f, args, cmd.ArgsLenAtDash())
		},
	}
	fl := c.Flags()
	fl.StringArrayVar(&f.Base, "base", nil, "base result file or glob (repeatable)")
	fl.StringArrayVar(&f.New, "new", nil, "new result file or glob (repeatable)")
	fl.StringArrayVar(&f.BaseRef, "base-ref", nil, "reference workload run in the base's environment (file or glob, repeatable)")
	fl.StringArrayVar(&f.NewRef, "new-ref", nil, "reference workload run in the new side's environment (file or glob, repeatable)")
	fl.Float64Var(&f.Alpha, "alpha", 0.01, "significance level; intervals are at 1−alpha; the gated rows' family-wise false-alarm rate (Holm–Bonferroni)")
	fl.DurationVar(&f.Window, "window", 0, "window of the per-second series the tests run on, whole seconds (default: chosen per stage from the runs' length)")
	fl.DurationVar(&f.Settle, "settle", time.Second, "seconds left out after each stage's warm-up")
	fl.StringSliceVar(&f.Metrics, "metric", nil, "metrics to compare (default all): "+compare.MetricNames())
	fl.StringSliceVar(&f.Gate, "gate", nil, "metrics whose regression exits 3 (default "+strings.Join(compare.DefaultGate, ",")+"; 'none' for none)")
	fl.StringVar(&f.Format, "format", "table", "output: table, markdown or json")
	fl.StringSliceVar(&f.MinEffect, "min-effect", nil, "practical margin per metric, METRIC=MARGIN: 10% (relative), 1pp (fractions) or a number in the unit (default 5% latencies and rates, 1pp error_rate and goodput)")
	fl.BoolVar(&f.Force, "force", false, "compare results whose fingerprints differ")
	fl.BoolVar(&f.AllowInvalid, "allow-invalid", false, "judge stages whose measurement was not valid instead of exiting 4")
	fl.Uint64Var(&f.Seed, "seed", 1, "seed of the bootstrap")
	fl.IntVar(&f.MinRuns, "min-runs", 0, "runs per side from which whole runs are compared with the U test (default: the fewest that can reach alpha)")
	return c
}

// runCompare runs spate compare; dash is where "--" splits the positional
// results into base and new ones (-1 when not given).
func runCompare(cmd *cobra.Command, f compare.Flags, args []string, dash int) error {
	base, nw, cfg, err := f.Plan(args, dash)
	if err != nil {
		return err
	}
	s, err := compare.ReadSides(cmd.Context(), base, nw, f.BaseRef, f.NewRef)
	if err != nil {
		return err
	}
	rep, err := compare.Compare(s, cfg)
	if err != nil {
		var me *compare.MismatchError
		if errors.As(err, &me) {
			return err
		}
		return usageErr("%v", err)
	}
	if err := compare.Write(cmd.OutOrStdout(), rep, f.Format); err != nil {
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
