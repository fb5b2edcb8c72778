package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate"
	"github.com/spate-dev/spate/experiment"
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

// probeRunFlags are the flags of spate probe run.
type probeRunFlags struct {
	target, model, out string
	specs              []string
	requests, conc     int
	vulnerability      float64
	seed               uint64
}

func newProbeRunCmd() *cobra.Command {
	var f probeRunFlags
	c := &cobra.Command{
		Use:     "run",
		Short:   "Send probes only (no other load) and print their figures",
		Long:    help("probe-run"),
		Example: help("probe-run.example"),
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return probeRun(cmd, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.target, "target", "", "API base URL (default: a built-in simulator on loopback)")
	fl.StringVar(&f.model, "model", "", "model to request (default: the first the server lists)")
	fl.StringSliceVar(&f.specs, "probes", []string{"all"}, "suites: built-in names, 'all', or YAML suite files")
	fl.IntVar(&f.requests, "requests", 200, "probe requests to send (the suites are cycled)")
	fl.IntVar(&f.conc, "concurrency", 8, "probe requests in flight")
	fl.Float64Var(&f.vulnerability, "vulnerability", 0.3, "without --target: the simulator's vulnerability, in [0, 1]")
	fl.StringVarP(&f.out, "out", "o", "spate-results/probes.json", "result file to write")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the run (and of the simulator)")
	return c
}

func probeRun(cmd *cobra.Command, f probeRunFlags) error {
	if f.requests < 1 || f.conc < 1 {
		return usageErr("--requests and --concurrency must be at least 1")
	}
	target := f.target
	if target == "" {
		if f.vulnerability < 0 || f.vulnerability > 1 {
			return usageErr("--vulnerability %g: want a probability in [0, 1]", f.vulnerability)
		}
		// A deterministic simulator that follows an attack with the given
		// probability; one that stops serving makes the run fail, which
		// says so.
		cfg := sim.Deterministic(20*time.Millisecond, 2*time.Millisecond, 0)
		cfg.Seed, cfg.Faults.Vulnerability = int64(f.seed), f.vulnerability
		s, err := sim.Start(cfg, "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer s.Close()
		target = s.URL
		fmt.Fprintf(cmd.ErrOrStderr(), "spate probe run: simulator (vulnerability %g) at %s\n", f.vulnerability, target)
	} else if cmd.Flags().Changed("vulnerability") {
		return usageErr("--vulnerability sets the built-in simulator: leave out --target, or set it on the server (spate sim, PUT /admin/faults)")
	}
	x := &experiment.Experiment{
		Target:   experiment.Target{URL: target, Model: f.model},
		Workload: experiment.Workload{Seed: new(f.seed)},
		Stages:   []experiment.Stage{{Name: "probes", Concurrency: f.conc, Requests: f.requests}},
		Probes:   experiment.Probes{Suites: f.specs, Fraction: 1},
		Outputs:  experiment.Outputs{Result: f.out},
		// A probe run's verdict is what the model answered, which no
		// timestamp moves: the result still says whether its timings
		// can be trusted (load.valid), but that does not fail the run.
		Measurement: experiment.Measurement{AllowInvalid: true},
	}
	_, err := spate.Run(cmd.Context(), x, options(cmd)...)
	return err
}
