package main

import (
	"fmt"
	"math"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/probe"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/result"
)

func init() {
	runExtensions = append(runExtensions, func() runExtension { return &probeExt{} })
}

// probeExt interleaves security probes with spate run's load (issue 11):
// --probes picks the suites, --probe-fraction the share of requests; each
// stage gets its probe figures (result.Probes).
type probeExt struct {
	specs    []string
	fraction float64
	sched    probe.Schedule
}

func (x *probeExt) addFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&x.specs, "probes", nil, "interleave security probes: built-in suites (spate probe list), 'all', or YAML suite files, comma-separated")
	fs.Float64Var(&x.fraction, "probe-fraction", 0.1, "with --probes: share of requests that are probes, in (0, 1]")
}

func (x *probeExt) before(_ *cobra.Command, f *runFlags) (func(), error) {
	if len(x.specs) == 0 {
		return nil, nil
	}
	if math.IsNaN(x.fraction) || x.fraction <= 0 || x.fraction > 1 {
		return nil, usageErr("--probe-fraction %g: want a share of requests in (0, 1], e.g. 0.1", x.fraction)
	}
	if f.api != openai.Chat {
		return nil, usageErr("--probes sends chat conversations: use it with --api chat (got --api %s)", f.api)
	}
	suites, err := probe.Load(x.specs)
	if err != nil {
		return nil, usageErr("--probes: %v", err)
	}
	set, err := probe.NewSet(suites)
	if err != nil {
		return nil, usageErr("--probes: %v", err)
	}
	x.sched = probe.Schedule{Set: set, Fraction: x.fraction}
	return nil, nil
}

func (x *probeExt) after(_ *cobra.Command, _ *runFlags, p *runner.Plan) error {
	if x.sched.Set == nil {
		return nil
	}
	src, err := probe.Mix(p.Source, x.sched)
	if err != nil {
		return usageErr("--probes: %v", err)
	}
	p.Source = src
	for i := range p.Stages {
		if p.Stages[i].Source == nil {
			continue
		}
		if p.Stages[i].Source, err = probe.Mix(p.Stages[i].Source, x.sched); err != nil {
			return usageErr("--probes: stage %s: %v", p.Stages[i].Name, err)
		}
	}
	// The shard extension may set p.Shard after this one runs.
	p.Observers = append(p.Observers, probe.NewObserver(x.sched))
	return nil
}

func (x *probeExt) finish(cmd *cobra.Command, f *runFlags, res *result.Result, _ string) error {
	if x.sched.Set == nil || f.quiet || f.noSummary {
		return nil
	}
	for i := range res.Scenarios {
		sc := &res.Scenarios[i]
		if sc.Probes == nil {
			continue
		}
		if err := probe.WriteFigures(cmd.OutOrStdout(), sc.Name, sc.Probes); err != nil {
			return fmt.Errorf("printing probe figures: %w", err)
		}
	}
	return nil
}
