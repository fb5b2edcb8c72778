package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate"
	"github.com/spate-dev/spate/examples"
	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/output/report"
	"github.com/spate-dev/spate/sim"
)

func newQuickstartCmd() *cobra.Command {
	var dir, preset string
	var stage time.Duration
	c := &cobra.Command{
		Use:   "quickstart",
		Short: "Try spate: a built-in simulator, a rate ramp that finds its knee, a result file",
		Long:  help("quickstart"),
		Args:  cobra.NoArgs,
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
	cfg, err := sim.Preset(preset)
	if err != nil {
		return usageErr("--preset: %v", err)
	}
	s, err := sim.Start(cfg, "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer func() {
		if err := s.Close(); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "simulator: %v\n", err)
		}
	}()
	// The bundled experiment, written out so that it can be read, edited
	// and run again with spate run.
	b, err := examples.Files.ReadFile("quickstart.yaml")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	expPath, resPath := filepath.Join(dir, "quickstart.yaml"), filepath.Join(dir, "quickstart.json")
	if err := os.WriteFile(expPath, b, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", expPath, err)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "spate quickstart: simulator (preset %s) at %s\n", preset, s.URL)
	fmt.Fprintf(out, "running %s: a ramp of rising Poisson load, 256±32 prompt tokens, 64 output tokens\n\n", expPath)

	x, err := experiment.Load(expPath)
	if err != nil {
		return err
	}
	htmlPath := filepath.Join(dir, "quickstart.html")
	x.Target.URL, x.SUT.Version = s.URL, "spate-sim/"+preset
	x.Outputs.Result, x.Outputs.Report = resPath, htmlPath
	x.Measurement.AllowInvalid = true // the table shows validity; the knee skips invalid stages
	for i := range x.Stages {
		if stage > 0 {
			x.Stages[i].Duration = stage
		}
	}
	res, runErr := spate.Run(cmd.Context(), x, append(options(cmd), spate.WithoutSummary())...)
	if res == nil {
		return runErr
	}
	if err := report.Sweep(out, res, 0.9); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nresult written to %s; open %s in a browser for the charts\n", resPath, htmlPath)
	fmt.Fprintf(out, "next: spate sim --preset %s, then spate run %s (or spate run --target http://127.0.0.1:8000/v1 --rate 8 --duration 30s)\n", preset, expPath)
	return runErr
}
