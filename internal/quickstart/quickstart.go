// Package quickstart is spate's first run: the simulator in this process,
// the bundled ramp experiment written where it can be read and run again,
// the run itself, and its sweep table with the knee.
package quickstart

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spate-dev/spate"
	"github.com/spate-dev/spate/examples"
	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/output/headline"
	"github.com/spate-dev/spate/internal/output/report"
	"github.com/spate-dev/spate/internal/verdict/capacity"
	"github.com/spate-dev/spate/sim"
)

// Config says where the quickstart writes and what it runs against.
type Config struct {
	// Dir receives quickstart.yaml, quickstart.json and quickstart.html.
	Dir string
	// Preset names the simulator's preset (recorded as the SUT version);
	// Sim is that preset's configuration.
	Preset string
	Sim    sim.Config
	// Stage, when positive, replaces every stage's duration.
	Stage time.Duration
	// Options are passed to spate.Run (writers, live progress); the run's
	// own summary is replaced by the sweep table.
	Options []spate.Option
}

// Run runs the quickstart, printing to out (and the simulator's closing
// error to errw), and returns the run's error (nil, or a verdict error).
func Run(ctx context.Context, out, errw io.Writer, c Config) error {
	s, err := sim.Start(c.Sim, "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("starting the simulator: %w", err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			fmt.Fprintf(errw, "simulator: %v\n", err)
		}
	}()
	b, err := examples.Files.ReadFile("quickstart.yaml")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", c.Dir, err)
	}
	expPath, resPath, htmlPath := filepath.Join(c.Dir, "quickstart.yaml"), filepath.Join(c.Dir, "quickstart.json"), filepath.Join(c.Dir, "quickstart.html")
	if err := os.WriteFile(expPath, b, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", expPath, err)
	}
	fmt.Fprintf(out, "spate quickstart: simulator (preset %s) at %s\n", c.Preset, s.URL)
	fmt.Fprintf(out, "running %s: a ramp of rising Poisson load, 256±32 prompt tokens, 64 output tokens\n\n", expPath)
	x, err := experiment.Load(expPath)
	if err != nil {
		return err
	}
	x.Target.URL, x.SUT.Version = s.URL, "spate-sim/"+c.Preset
	x.Outputs.Result, x.Outputs.Report = resPath, htmlPath
	x.Measurement.AllowInvalid = true // the table shows validity; the knee skips invalid stages
	for i := range x.Stages {
		if c.Stage > 0 {
			x.Stages[i].Duration = c.Stage
		}
	}
	res, runErr := spate.Run(ctx, x, append(c.Options, spate.WithoutSummary())...)
	if res == nil {
		return runErr
	}
	if err := report.Sweep(out, res, headline.MinGoodput); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nresult written to %s; open %s in a browser for the charts\n", resPath, htmlPath)
	rate := "8"
	if k, _ := capacity.Knee(res.Scenarios, headline.MinGoodput); k >= 0 {
		rate = strconv.FormatFloat(res.Scenarios[k].Load.TargetRate, 'g', -1, 64) // a run at the knee
	}
	fmt.Fprintf(out, "next: spate sim --preset %s, then spate run %s (or spate run --target http://127.0.0.1:8000/v1 --rate %s --duration 30s)\n", c.Preset, expPath, rate)
	return runErr
}
