package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/internal/output/report"
	"github.com/spate-dev/spate/internal/shard/merge"
	"github.com/spate-dev/spate/internal/verdict"
	"github.com/spate-dev/spate/result"
)

func newMergeCmd() *cobra.Command {
	var (
		out     string
		force   bool
		partial bool
		spread  time.Duration
		quiet   bool
	)
	c := &cobra.Command{
		Use:     "merge SHARD.json... -o merged.json",
		Short:   "Merge the results of a sharded run into one exact result",
		Long:    help("merge"),
		Example: help("merge.example"),
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMerge(cmd, args, out, merge.Options{Force: force, AllowPartial: partial, MaxClockSpread: spread}, quiet)
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "", "merged result file (default: the JSON on stdout)")
	c.Flags().BoolVar(&force, "force", false, "merge shards that disagree on the experiment, or repeat an index, anyway")
	c.Flags().BoolVar(&partial, "allow-partial", false, "merge an incomplete set: shards missing, or an index given twice (merged once)")
	c.Flags().DurationVar(&spread, "max-clock-spread", merge.DefaultMaxClockSpread, "warn when the shards' clock offsets provably differ by more than this")
	c.Flags().BoolVarP(&quiet, "quiet", "q", false, "print no summary")
	return c
}

func runMerge(cmd *cobra.Command, paths []string, out string, opt merge.Options, quiet bool) error {
	if opt.MaxClockSpread < 0 {
		return usageErr("--max-clock-spread %s: must not be negative", opt.MaxClockSpread)
	}
	var in []merge.Input
	for _, p := range paths {
		r, err := merge.Read(cmd.Context(), p)
		if err != nil {
			return err
		}
		in = append(in, merge.Input{Name: p, Result: r})
	}
	res, err := merge.Merge(in, opt)
	if err != nil {
		return err
	}
	if out == "" || quiet {
		// Otherwise the summary shows them.
		for _, w := range res.Warnings {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
		}
	}
	if out == "" {
		if err := result.Encode(cmd.OutOrStdout(), res); err != nil {
			return err
		}
	} else {
		if err := result.Write(out, res); err != nil {
			return err
		}
		if !quiet {
			if err := report.Console(cmd.OutOrStdout(), res); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "merged %d shard(s) of %d into %s\n", len(res.Shard.Merged), res.Shard.Count, out)
		}
	}
	if res.Interrupted { // as one interrupted run: an error, whatever passed
		return errors.New("a shard was interrupted: the merged result holds part of the run")
	}
	return verdict.Outcome(res, res.Config.AllowInvalid) // 3 failed, 4 invalid, as run
}
