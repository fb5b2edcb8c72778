package plan

import (
	"context"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/result"
)

// A feature is one capability that wraps the core plan: its settings are a
// section of the experiment; it checks them, may start something before
// the plan is built, adds to the built plan (wraps the client or the
// workload, adds observers) and acts on the result once it is written.
type feature interface {
	// check reports settings the feature cannot run with; x has its
	// defaults. It starts nothing; a file it reads stops on ctx.
	check(ctx context.Context, x *experiment.Experiment) error
	// start runs before the core plan is built; it may change r.X (the
	// chaos proxy takes the target's place) and register what Close
	// stops with r.onClose.
	start(ctx context.Context, r *Run) error
	// apply changes the built plan, r.Plan.
	apply(ctx context.Context, r *Run) error
	// finish is called once the result is written (and for partial and
	// failed runs, whose result exists); an error makes the run fail.
	finish(r *Run, res *result.Result) error
}

// features returns new instances of the run's features, in the order they
// act: each phase (check, start, apply, finish) calls them in this order,
// and the observers they add see a stage end in this order. The order
// matters:
//   - chaos comes first: its start points the target at the chaos proxy
//     before anything reads it, and its observer fills a stage's chaos
//     figures (fault windows) before resilience reads them;
//   - probes come before shard, which narrows the plan that probes mixed;
//   - report outputs come before shard, which rewrites the result with its
//     shard section after them;
//   - vector and workflow come last: they replace the protocol client and
//     the workload that the others wrapped or kept.
func features() []feature {
	return []feature{
		&chaosFeature{},
		&observeFeature{},
		&probeFeature{},
		&reportFeature{},
		&resilienceFeature{},
		&shardFeature{},
		&vectorFeature{},
	}
}
