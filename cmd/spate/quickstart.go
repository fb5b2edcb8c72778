package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/examples"
	"github.com/spate-dev/spate/internal/output/report"
	"github.com/spate-dev/spate/result"
	"github.com/spate-dev/spate/sim"
)

func newQuickstartCmd() *cobra.Command {
	var dir, preset string
	var stage time.Duration
	c := &cobra.Command{
		Use:   "quickstart",
		Short: "Try spate: a built-in simulator, a rate ramp that finds its knee, a result file",
		Long: `Starts the built-in LLM serving simulator on a free loopback port, runs the
bundled experiment examples/quickstart.yaml against it (a ramp of rising
Poisson load with synthetic prompts), prints each stage and the knee (the most
load that kept 90 % of requests within ttft=1s, tpot=100ms), and writes the
experiment and its result to ./spate-results/. Needs no GPU and no network.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return quickstart(cmd, dir, preset, stage)
		},
	}
	c.Flags().StringVar(&dir, "dir", "spate-results", "directory for the experiment and result files")
	c.Flags().StringVar(&preset, "preset", "small-gpu", "simulator preset (see spate sim --help)")
	c.Flags().DurationVar(&stage, "stage", 0, "duration of each stage of the ramp (default: the experiment's 5s)")
	return c
}

func quickstart(cmd *cobra.Command, dir, preset string, stage time.Duration) error {
	ctx := cmd.Context()
	cfg, err := sim.Preset(preset)
	if err != nil {
		return usageErr("--preset: %v", err)
	}
	srv, err := sim.New(cfg)
	if err != nil {
		return fmt.Errorf("starting the simulator: %w", err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listening on loopback: %w", err)
	}
	simCtx, stopSim := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := sim.Serve(simCtx, ln, srv); err != nil && !errors.Is(err, http.ErrServerClosed) && simCtx.Err() == nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "simulator: %v\n", err)
		}
	}()
	defer func() { stopSim(); wg.Wait() }()

	// The bundled experiment, written out so that it can be read, edited
	// and run again with spate run.
	exp, err := examples.Files.ReadFile("quickstart.yaml")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	expPath, resPath := filepath.Join(dir, "quickstart.yaml"), filepath.Join(dir, "quickstart.json")
	if err := os.WriteFile(expPath, exp, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", expPath, err)
	}
	target := "http://" + ln.Addr().String() + "/v1"
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "spate quickstart: simulator (preset %s) at %s\n", preset, target)
	fmt.Fprintf(out, "running %s: a ramp of rising Poisson load, 256±32 prompt tokens, 64 output tokens\n\n", expPath)

	htmlPath := filepath.Join(dir, "quickstart.html")
	args := []string{expPath, "--target", target, "--out", resPath, "--report", htmlPath, "--no-summary", "--sut-version", "spate-sim/" + preset}
	if stage > 0 {
		args = append(args, "--duration", stage.String())
	}
	run := newRunCmd()
	run.SetArgs(args)
	run.SetOut(out)
	run.SetErr(cmd.ErrOrStderr())
	run.SilenceErrors, run.SilenceUsage = true, true
	runErr := run.ExecuteContext(ctx)
	res, err := result.Read(resPath)
	if err != nil {
		if runErr != nil {
			return runErr
		}
		return err
	}
	if err := report.Sweep(out, res, 0.9); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nresult written to %s; open %s in a browser for the charts\n", resPath, htmlPath)
	fmt.Fprintf(out, "next: spate sim --preset %s, then spate run %s (or spate run --target http://127.0.0.1:8000/v1 --rate 8 --duration 30s)\n", preset, expPath)
	return runErr
}
