package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/internal/probe"
	"github.com/spate-dev/spate/sim"
)

func init() { commands = append(commands, newProbeCmd) }

func newProbeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "probe",
		Short: "Security probes: list the suites, or run them alone",
		Long: `Security probes (prompt injection, system prompt extraction, sensitive
information disclosure, and a benign control set) judged by canary, regex,
refusal and JSON policy detectors. Interleave them with any load with
spate run --probes SUITES --probe-fraction F; spate probe run sends probes only.`,
		Args: cobra.NoArgs,
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
			suites, err := probe.Load(specs)
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
		Use:   "run",
		Short: "Send probes only (no other load) and print their figures",
		Long: `Send the probes of the chosen suites, and nothing else, through spate run's
engine (spate run --probe-fraction 1) and print attack success, interception,
leak and false-refusal rates per family. Without --target it starts the
built-in simulator on loopback with the given --vulnerability: it follows an
attack with that probability and refuses it otherwise.`,
		Example: `  spate probe run --vulnerability 0.3
  spate probe run --target http://127.0.0.1:8000/v1 --probes injection-direct,benign --requests 400`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return probeRun(cmd, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.target, "target", "", "API base URL (default: a built-in simulator on loopback)")
	fl.StringVar(&f.model, "model", "", "model to request (default: the first the server lists)")
	fl.StringSliceVar(&f.specs, "probes", []string{"all"}, "suites: built-in names, 'all', or YAML suite files")
	fl.IntVar(&f.requests, "requests", 200, "probe requests to send (the suites are cycled)")
	fl.IntVar(&f.conc, "concurrency", 8, "probe requests in flight")
	fl.Float64Var(&f.vulnerability, "vulnerability", 0.3, "without --target: the simulator's vulnerability, in [0, 1]")
	fl.StringVar(&f.out, "out", "spate-results/probes.json", "result file to write")
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
		url, stop, err := startProbeSim(cmd.Context(), f.vulnerability, int64(f.seed))
		if err != nil {
			return err
		}
		defer stop()
		target = url
		fmt.Fprintf(cmd.ErrOrStderr(), "spate probe run: simulator (vulnerability %g) at %s\n", f.vulnerability, target)
	} else if cmd.Flags().Changed("vulnerability") {
		return usageErr("--vulnerability sets the built-in simulator: leave out --target, or set it on the server (spate sim, PUT /admin/faults)")
	}
	args := []string{"--target", target, "--probes", strings.Join(f.specs, ","), "--probe-fraction", "1",
		"--concurrency", strconv.Itoa(f.conc), "--requests", strconv.Itoa(f.requests),
		"--out", f.out, "--seed", strconv.FormatUint(f.seed, 10), "--name", "probes"}
	if f.model != "" {
		args = append(args, "--model", f.model)
	}
	rc := newRunCmd()
	rc.SetArgs(args)
	rc.SetOut(cmd.OutOrStdout())
	rc.SetErr(cmd.ErrOrStderr())
	rc.SilenceErrors, rc.SilenceUsage = true, true
	return rc.ExecuteContext(cmd.Context())
}

// startProbeSim serves a deterministic simulator with the given
// vulnerability on a free loopback port until stop is called.
func startProbeSim(ctx context.Context, vulnerability float64, seed int64) (url string, stop func(), err error) {
	cfg := sim.Deterministic(20*time.Millisecond, 2*time.Millisecond, 0)
	cfg.Seed = seed
	cfg.Faults.Vulnerability = vulnerability
	s, err := sim.New(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("starting the simulator: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = s.Close()
		return "", nil, fmt.Errorf("listening on loopback: %w", err)
	}
	simCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	// A simulator that stops serving makes the run fail, which says so.
	wg.Go(func() { _ = sim.Serve(simCtx, ln, s) })
	return "http://" + ln.Addr().String() + "/v1", func() { cancel(); wg.Wait(); _ = s.Close() }, nil
}
