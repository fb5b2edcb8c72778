package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/metrics"
	"github.com/spate-dev/spate/openai"
	"github.com/spate-dev/spate/report"
	"github.com/spate-dev/spate/result"
	"github.com/spate-dev/spate/runner"
	"github.com/spate-dev/spate/sim"
	"github.com/spate-dev/spate/tokenizer"
	"github.com/spate-dev/spate/workload"
)

// quickstartRates is the bundled ramp: it crosses the knee of the
// simulator's small-gpu preset.
var quickstartRates = []float64{2, 4, 8, 12, 16, 24}

func newQuickstartCmd() *cobra.Command {
	var dir, preset string
	var stage time.Duration
	c := &cobra.Command{
		Use:   "quickstart",
		Short: "Try spate: a built-in simulator, a rate ramp that finds its knee, a result file",
		Long: `Starts the built-in LLM serving simulator on a free loopback port, sends it a
ramp of rising Poisson load with synthetic prompts, prints each stage and the
knee (the most load that kept 90 % of requests within ttft=1s, tpot=100ms), and
writes the result file to ./spate-results/. Needs no GPU and no network.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return quickstart(cmd, dir, preset, stage)
		},
	}
	c.Flags().StringVar(&dir, "dir", "spate-results", "directory for the result file")
	c.Flags().StringVar(&preset, "preset", "small-gpu", "simulator preset (see spate sim --help)")
	c.Flags().DurationVar(&stage, "stage", 5*time.Second, "duration of each stage of the ramp")
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

	target := "http://" + ln.Addr().String() + "/v1"
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "spate quickstart: simulator (preset %s) at %s\n", preset, target)
	fmt.Fprintf(out, "ramp: %v req/s, %s each, 256±32 prompt tokens, 64 output tokens\n\n", quickstartRates, stage)

	tok, err := tokenizer.CL100K()
	if err != nil {
		return err
	}
	client, err := openai.New(openai.Config{
		BaseURL: target, API: openai.Chat, Model: "spate-sim", Stream: true, IgnoreEOS: true,
		Timeout: time.Minute, IdleTimeout: 30 * time.Second, Tokenizer: tok, TokenizerSample: 16,
	})
	if err != nil {
		return err
	}
	slo := metrics.SLO{TTFT: time.Second, TPOT: 100 * time.Millisecond}
	var stages []runner.Stage
	for _, r := range quickstartRates {
		stages = append(stages, runner.Stage{
			Name: fmt.Sprintf("rate-%g", r), Arrival: "poisson", Rate: r, Burstiness: 1,
			Duration: stage, DrainTimeout: 20 * time.Second, SLO: slo,
		})
	}
	in := workload.Lengths{Mean: 256, SD: 32, Min: 1}
	outLen := workload.Lengths{Mean: 64, Min: 1}
	p := runner.Plan{
		Stages:  stages,
		Source:  workload.Synthetic{Input: in, Output: outLen, Seed: 1},
		Client:  client,
		Seed:    1,
		Version: version,
		Provenance: result.Provenance{
			Model: "spate-sim", SUTVersion: "spate-sim/" + preset, Target: target, API: openai.Chat, Tokenizer: tok.Name(),
		},
		Config: result.Config{
			Arrival: "poisson", Duration: stage.String(), InputTokens: "256:32", OutputTokens: "64",
			Stream: true, SLO: slo.String(), Seed: 1,
		},
		Progress: cmd.ErrOrStderr(), ProgressEvery: 3 * time.Second,
	}
	res, runErr := runner.Run(ctx, p)
	if res == nil {
		return runErr
	}
	if err := report.Sweep(out, res, 0.9); err != nil {
		return err
	}
	path := filepath.Join(dir, "quickstart.json")
	if err := result.Write(path, res); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nresult written to %s\n", path)
	fmt.Fprintf(out, "next: spate sim --preset %s, then spate run --target http://127.0.0.1:8000/v1 --rate 8 --duration 30s\n", preset)
	return outcomeErr(res, runErr)
}
