package main

import (
	"fmt"
	"net"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/sim"
)

func newSimCmd() *cobra.Command {
	var f sim.Flags
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the built-in LLM serving simulator",
		Long:  help("sim", strings.Join(sim.Presets(), ", ")),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErr("spate sim takes no arguments, got %q", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.Config(cmd.Flags())
			if err != nil {
				return usageErr("%v", err)
			}
			// The simulator runs alone: each clock may keep a processor to
			// itself while it sleeps, the rest serve HTTP.
			if cfg.Engine == nil {
				runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), runtime.NumCPU()) + max(cfg.ClockThreads, 1))
			}
			s, err := sim.New(cfg)
			if err != nil {
				return usageErr("%v", err)
			}
			defer s.Close()
			ln, err := net.Listen("tcp", f.Addr)
			if err != nil {
				return fmt.Errorf("listening on %s (--addr): %w", f.Addr, err)
			}
			mode := fmt.Sprintf("deterministic mode: ttft=%v itl=%v output-tokens=%d", cfg.TTFT, cfg.ITL, cfg.OutputTokens)
			if cfg.Engine != nil {
				mode = "engine mode"
				if f.Preset != "" {
					mode += ", preset " + f.Preset
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "spate sim: serving model %q on http://%s (%s); Ctrl-C stops\n", cfg.Model, ln.Addr(), mode)
			return sim.Serve(cmd.Context(), ln, s)
		},
	}
	f.AddFlags(cmd.Flags())
	return cmd
}
