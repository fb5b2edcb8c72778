package plan

import (
	"context"
	"fmt"
	"math"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/probe"
	"github.com/spate-dev/spate/result"
)

// probeFeature interleaves security probes with the load (experiment
// section probes): the suites, the share of requests; each stage gets its
// probe figures (result.Probes).
type probeFeature struct {
	sched probe.Schedule
}

func (f *probeFeature) check(ctx context.Context, x *experiment.Experiment) error {
	_, err := probeSchedule(ctx, x)
	return err
}

// probeSchedule loads the probe suites of x, or returns a zero schedule
// when it has none.
func probeSchedule(ctx context.Context, x *experiment.Experiment) (probe.Schedule, error) {
	pr := x.Probes
	if len(pr.Suites) == 0 {
		return probe.Schedule{}, nil
	}
	if math.IsNaN(pr.Fraction) || pr.Fraction <= 0 || pr.Fraction > 1 {
		return probe.Schedule{}, invalidf("--probe-fraction %g: want a share of requests in (0, 1], e.g. 0.1", pr.Fraction)
	}
	if x.Target.API != openai.Chat {
		return probe.Schedule{}, invalidf("--probes sends chat conversations: use it with --api chat (got --api %s)", x.Target.API)
	}
	suites, err := probe.Load(ctx, pr.Suites)
	if err != nil {
		return probe.Schedule{}, invalidf("--probes: %v", err)
	}
	set, err := probe.NewSet(suites)
	if err != nil {
		return probe.Schedule{}, invalidf("--probes: %v", err)
	}
	return probe.Schedule{Set: set, Fraction: pr.Fraction}, nil
}

func (f *probeFeature) start(ctx context.Context, r *Run) (err error) {
	f.sched, err = probeSchedule(ctx, r.X)
	return err
}

func (f *probeFeature) apply(_ context.Context, r *Run) error {
	if f.sched.Set == nil {
		return nil
	}
	p := &r.Plan
	src, err := probe.Mix(p.Source, f.sched)
	if err != nil {
		return invalidf("--probes: %v", err)
	}
	p.Source = src
	for i := range p.Stages {
		if p.Stages[i].Source == nil {
			continue
		}
		if p.Stages[i].Source, err = probe.Mix(p.Stages[i].Source, f.sched); err != nil {
			return invalidf("--probes: stage %s: %v", p.Stages[i].Name, err)
		}
	}
	// The probe observer reads each record's run-wide request index, which
	// a shard (set up after this feature) keeps.
	p.Observers = append(p.Observers, probe.NewObserver(f.sched))
	return nil
}

func (f *probeFeature) finish(r *Run, res *result.Result) error {
	if f.sched.Set == nil || !r.summary() {
		return nil
	}
	for i := range res.Scenarios {
		sc := &res.Scenarios[i]
		if sc.Probes == nil {
			continue
		}
		if err := probe.WriteFigures(r.stdout(), sc.Name, sc.Probes); err != nil {
			return fmt.Errorf("printing probe figures: %w", err)
		}
	}
	return nil
}
