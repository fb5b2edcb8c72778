package main

import (
	"time"

	"github.com/spf13/cobra"

	qs "github.com/spate-dev/spate/internal/quickstart"
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
	return qs.Run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(),
		qs.Config{Dir: dir, Preset: preset, Sim: cfg, Stage: stage, Options: options(cmd)})
}
