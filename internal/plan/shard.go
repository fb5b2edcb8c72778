package plan

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/internal/shard/merge"
	"github.com/spate-dev/spate/result"
)

// Environment variables a Kubernetes Indexed Job sets (JOB_COMPLETION_INDEX)
// or spate k8s job sets (SPATE_SHARDS).
const (
	envJobIndex = "JOB_COMPLETION_INDEX"
	envShards   = "SPATE_SHARDS"
)

// rateMetrics are the threshold figures a shard has only a part of.
var rateMetrics = map[string]bool{"rps": true, "goodput_rps": true, "achieved_rate": true, "input_tps": true, "output_tps": true, "total_tps": true}

// shardFeature makes the run send one shard of a load split over several
// processes (experiment section shard: part I/N, or $JOB_COMPLETION_INDEX
// with count or $SPATE_SHARDS; startAt for a common start).
type shardFeature struct {
	shard   runner.Shard
	sharded bool
	startAt *time.Time
	clock   *result.ClockOffset
}

func (f *shardFeature) check(_ context.Context, x *experiment.Experiment) error {
	_, _, _, err := parseShard(x.Shard)
	return err
}

// parseShard works out the shard from the settings and the environment.
func parseShard(s experiment.Shard) (sh runner.Shard, sharded bool, start *time.Time, err error) {
	count := s.Count
	if count == 0 {
		if v := os.Getenv(envShards); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return sh, false, nil, invalidf("$%s=%q: want a whole number of shards, at least 1", envShards, v)
			}
			count = n
		}
	} else if count < 1 {
		return sh, false, nil, invalidf("--shards %d: want at least 1", count)
	}
	switch {
	case s.Part != "":
		sh, err = runner.ParseShard(s.Part)
		if err != nil {
			return sh, false, nil, invalidf("--shard: %v", err)
		}
		if count != 0 && count != sh.Count {
			return sh, false, nil, invalidf("--shard %s says %d shards but --shards/$%s says %d", s.Part, sh.Count, envShards, count)
		}
		sharded = true
	case os.Getenv(envJobIndex) != "":
		v := os.Getenv(envJobIndex)
		if count == 0 {
			return sh, false, nil, invalidf("$%s=%s is set (a Kubernetes Indexed Job) but not the shard count: give --shards N or set $%s", envJobIndex, v, envShards)
		}
		sh, err = runner.ParseShard(v + "/" + strconv.Itoa(count))
		if err != nil {
			return sh, false, nil, invalidf("$%s: %v", envJobIndex, err)
		}
		sharded = true
	case count != 0:
		return sh, false, nil, invalidf("--shards/$%s=%d without a shard index: give --shard I/%d, or set $%s", envShards, count, count, envJobIndex)
	}
	if s.StartAt != "" {
		t, err := time.Parse(time.RFC3339Nano, s.StartAt)
		if err != nil {
			return sh, false, nil, invalidf("--start-at %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z: %v", s.StartAt, err)
		}
		start = &t
	}
	return sh, sharded, start, nil
}

func (f *shardFeature) start(context.Context, *Run) error { return nil }

func (f *shardFeature) apply(ctx context.Context, r *Run) (err error) {
	if f.shard, f.sharded, f.startAt, err = parseShard(r.X.Shard); err != nil {
		return err
	}
	p := &r.Plan
	if f.sharded {
		for _, st := range p.Stages {
			if err := f.shard.Check(st); err != nil {
				return invalidf("--shard %d/%d: %v", f.shard.Index, f.shard.Count, err)
			}
		}
		p.Shard = f.shard
		// A shard sends 1/N of the load: thresholds are evaluated by
		// spate merge on the merged result (the experiment's thresholds
		// stay in the result's config for it), and rate thresholds cannot
		// abort one shard.
		p.Thresholds = nil
		var kept []runner.Abort
		for _, a := range p.Aborts {
			if rateMetrics[a.Threshold.Metric] {
				fmt.Fprintf(r.stderr(), "shard %d/%d: abortOnFail %q is not checked on a shard: it sees 1/%d of the rate\n", f.shard.Index, f.shard.Count, a.Threshold.Expr, f.shard.Count)
				continue
			}
			kept = append(kept, a)
		}
		p.Aborts = kept
		if *r.X.Shard.ClockCheck && r.X.Target.URL != "" {
			f.clock = f.measureClock(ctx, r, r.X.Target.URL)
		}
	}
	if f.startAt != nil {
		return f.wait(ctx, r, *f.startAt)
	}
	return nil
}

// measureClock estimates the clock offset against the target; a failure is
// a note on stderr, not an error: the run does not depend on it.
func (f *shardFeature) measureClock(ctx context.Context, r *Run, target string) *result.ClockOffset {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	opt := merge.ClockOptions{}
	if f.startAt != nil {
		// The check must not delay the common start: it gets the time
		// until then, less a margin, at most its default.
		left := time.Until(*f.startAt) - 300*time.Millisecond
		if left < 200*time.Millisecond {
			fmt.Fprintf(r.stderr(), "shard %d/%d: no time for a clock check before --start-at\n", f.shard.Index, f.shard.Count)
			return nil
		}
		opt.Budget = min(left, 3*time.Second)
	}
	c, err := merge.EstimateOffset(ctx, merge.HTTPDateProbe(client, target), merge.SystemClock{}, opt)
	if err != nil {
		fmt.Fprintf(r.stderr(), "shard %d/%d: clock offset against %s not measured: %v\n", f.shard.Index, f.shard.Count, scrub.URL(target), err)
		return nil
	}
	if !r.quiet() {
		fmt.Fprintf(r.stderr(), "shard %d/%d: clock offset against the target %+.1f ± %.1f ms (%d probes)\n", f.shard.Index, f.shard.Count, c.OffsetMS, c.UncertaintyMS, c.Probes)
	}
	return &c
}

// wait sleeps until start, or fails when start is too far in the past.
func (f *shardFeature) wait(ctx context.Context, r *Run, start time.Time) error {
	lateMax := r.X.Shard.StartLateMax
	d := time.Until(start)
	if d < -lateMax {
		return fmt.Errorf("--start-at %s was %.1f s ago, more than --start-late-max %s: the other shards have started without this one; give a later start time", start.Format(time.RFC3339), -d.Seconds(), lateMax)
	}
	if d <= 0 {
		fmt.Fprintf(r.stderr(), "--start-at: starting %.3f s late\n", -d.Seconds())
		return nil
	}
	if !r.quiet() {
		fmt.Fprintf(r.stderr(), "--start-at: waiting %.1f s until %s\n", d.Seconds(), start.Format(time.RFC3339Nano))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("interrupted while waiting for --start-at: %w", ctx.Err())
	}
}

// finish records the shard in the result (rewriting the result file) and
// prints the result on stdout when asked to.
func (f *shardFeature) finish(r *Run, res *result.Result) error {
	out := r.X.Outputs.Result
	if f.sharded {
		res.Shard = &result.Shard{
			Index: f.shard.Index, Count: f.shard.Count,
			Experiment: merge.Experiment(res, f.shard.Count),
			StartAt:    f.startAt, Clock: f.clock,
		}
		if out != "" {
			if err := result.Write(out, res); err != nil {
				return err
			}
		}
	}
	if r.X.Outputs.ResultStdout {
		return result.Encode(r.stdout(), res)
	}
	return nil
}
