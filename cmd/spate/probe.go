package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate"
	"github.com/spate-dev/spate/internal/probe"
	"github.com/spate-dev/spate/sim"
)

func newProbeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "probe",
		Short: "Security probes: list the suites, or run them alone",
		Long:  help("probe"),
		Args:  cobra.NoArgs,
	}
	c.AddCommand(newProbeListCmd(), newProbeRunCmd())
	return c
}

func newProbeListCmd() *cobra.Command {
	var specs []string
	var verbose bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List probe suites: family, kind, probes, OWASP ids, techniques",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			suites, err := probe.Load(cmd.Context(), specs)
			if err != nil {
				return usageErr("--probes: %v", err)
			}
			return probe.WriteSuites(cmd.OutOrStdout(), suites, verbose)
		},
	}
	c.Flags().StringSliceVar(&specs, "probes", []string{"all"}, "suites to list: built-in names, 'all', or YAML suite files")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "also list every probe and its detectors")
	return c
}

func newProbeRunCmd() *cobra.Command {
	var f probe.RunOptions
	c := &cobra.Command{
		Use:     "run",
		Short:   "Send probes only (no other load) and print their figures",
		Long:    help("probe-run"),
		Example: help("probe-run.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.VulnerabilityGiven = cmd.Flags().Changed("vulnerability")
			return probeRun(cmd, f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.Target, "target", "", "API base URL (default: a built-in simulator on loopback)")
	fl.StringVar(&f.Model, "model", "", "model to request (default: the first the server lists)")
	fl.StringSliceVar(&f.Suites, "probes", []string{"all"}, "suites: built-in names, 'all', or YAML suite files")
	fl.IntVar(&f.Requests, "requests", 200, "probe requests to send (the suites are cycled)")
	fl.IntVar(&f.Concurrency, "concurrency", 8, "probe requests in flight")
	fl.Float64Var(&f.Vulnerability, "vulnerability", 0.3, "without --target: the simulator's vulnerability, in [0, 1]")
	fl.StringVarP(&f.Out, "out", "o", "spate-results/probes.json", "result file to write")
	fl.Uint64Var(&f.Seed, "seed", 1, "seed of the run (and of the simulator)")
	return c
}

func probeRun(cmd *cobra.Command, f probe.RunOptions) error {
	if err := f.Check(); err != nil {
		return usageErr("%w", err)
	}
	target := f.Target
	if target == "" {
		// A deterministic simulator that follows an attack with the given
		// probability; one that stops serving makes the run fail, which
		// says so.
		cfg := sim.Deterministic(20*time.Millisecond, 2*time.Millisecond, 0)
		cfg.Seed, cfg.Faults.Vulnerability = int64(f.Seed), f.Vulnerability
		s, err := sim.Start(cfg, "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer s.Close()
		target = s.URL
		fmt.Fprintf(cmd.ErrOrStderr(), "spate probe run: simulator (vulnerability %g) at %s\n", f.Vulnerability, target)
	}
	_, err := spate.Run(cmd.Context(), f.Experiment(target), options(cmd)...)
	return err
}
