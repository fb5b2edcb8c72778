package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/shard/merge"
	"github.com/spate-dev/spate/result"
)

func init() {
	runExtensions = append(runExtensions, func() runExtension { return &shardExt{} })
}

// Environment variables a Kubernetes Indexed Job sets (JOB_COMPLETION_INDEX)
// or spate k8s job sets (SPATE_SHARDS).
const (
	envJobIndex = "JOB_COMPLETION_INDEX"
	envShards   = "SPATE_SHARDS"
)

// rateMetrics are the threshold figures a shard has only a part of.
var rateMetrics = map[string]bool{"rps": true, "goodput_rps": true, "achieved_rate": true, "input_tps": true, "output_tps": true, "total_tps": true}

// shardExt makes spate run send one shard of a load split over several
// processes (issue 12): --shard I/N, or JOB_COMPLETION_INDEX with
// --shards N or SPATE_SHARDS; --start-at for a common start.
type shardExt struct {
	spec         string
	shards       int
	startAt      string
	lateMax      time.Duration
	clockCheck   bool
	resultStdout bool

	shard   runner.Shard
	sharded bool
	start   *time.Time
	clock   *result.ClockOffset
}

func (x *shardExt) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&x.spec, "shard", "", "send shard I of N of the load (I from 0), e.g. 0/4; merge the shards' results with spate merge")
	fs.IntVar(&x.shards, "shards", 0, "shard count when the index comes from $JOB_COMPLETION_INDEX (Kubernetes Indexed Job); default $SPATE_SHARDS")
	fs.StringVar(&x.startAt, "start-at", "", "wait until this time (RFC 3339, e.g. 2026-01-02T15:04:05Z) before sending, so that shards start together")
	fs.DurationVar(&x.lateMax, "start-late-max", 10*time.Second, "with --start-at: fail when the start time is already this far in the past")
	fs.BoolVar(&x.clockCheck, "clock-check", true, "when sharded, estimate this machine's clock offset against the target's HTTP Date header (a few HEAD requests, about 1-3 s)")
	fs.BoolVar(&x.resultStdout, "result-stdout", false, "print the result JSON on stdout at the end (for kubectl logs; use with --quiet)")
}

// parse works out the shard from the flags and the environment.
func (x *shardExt) parse() error {
	count := x.shards
	if count == 0 {
		if v := os.Getenv(envShards); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return usageErr("$%s=%q: want a whole number of shards, at least 1", envShards, v)
			}
			count = n
		}
	} else if count < 1 {
		return usageErr("--shards %d: want at least 1", count)
	}
	switch {
	case x.spec != "":
		sh, err := runner.ParseShard(x.spec)
		if err != nil {
			return usageErr("--shard: %v", err)
		}
		if count != 0 && count != sh.Count {
			return usageErr("--shard %s says %d shards but --shards/$%s says %d", x.spec, sh.Count, envShards, count)
		}
		x.shard, x.sharded = sh, true
	case os.Getenv(envJobIndex) != "":
		v := os.Getenv(envJobIndex)
		if count == 0 {
			return usageErr("$%s=%s is set (a Kubernetes Indexed Job) but not the shard count: give --shards N or set $%s", envJobIndex, v, envShards)
		}
		sh, err := runner.ParseShard(v + "/" + strconv.Itoa(count))
		if err != nil {
			return usageErr("$%s: %v", envJobIndex, err)
		}
		x.shard, x.sharded = sh, true
	case count != 0:
		return usageErr("--shards/$%s=%d without a shard index: give --shard I/%d, or set $%s", envShards, count, count, envJobIndex)
	}
	if x.startAt != "" {
		t, err := time.Parse(time.RFC3339Nano, x.startAt)
		if err != nil {
			return usageErr("--start-at %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z: %v", x.startAt, err)
		}
		x.start = &t
	}
	return nil
}

func (x *shardExt) before(_ *cobra.Command, _ *runFlags) (func(), error) {
	return nil, x.parse()
}

func (x *shardExt) after(cmd *cobra.Command, f *runFlags, p *runner.Plan) error {
	if x.sharded {
		for _, st := range p.Stages {
			if err := x.shard.Check(st); err != nil {
				return usageErr("--shard %d/%d: %v", x.shard.Index, x.shard.Count, err)
			}
		}
		p.Shard = x.shard
		// A shard sends 1/N of the load: thresholds are evaluated by
		// spate merge on the merged result (the experiment's thresholds
		// stay in the result's config for it), and rate thresholds cannot
		// abort one shard.
		p.Thresholds = nil
		var kept []runner.Abort
		for _, a := range p.Aborts {
			if rateMetrics[a.Threshold.Metric] {
				fmt.Fprintf(cmd.ErrOrStderr(), "shard %d/%d: abortOnFail %q is not checked on a shard: it sees 1/%d of the rate\n", x.shard.Index, x.shard.Count, a.Threshold.Expr, x.shard.Count)
				continue
			}
			kept = append(kept, a)
		}
		p.Aborts = kept
		if x.clockCheck && f.target != "" {
			x.clock = x.measureClock(cmd, f.target, f.quiet)
		}
	}
	if x.start != nil {
		return x.wait(cmd.Context(), cmd, *x.start, f.quiet)
	}
	return nil
}

// measureClock estimates the clock offset against the target; a failure is
// a note on stderr, not an error: the run does not depend on it.
func (x *shardExt) measureClock(cmd *cobra.Command, target string, quiet bool) *result.ClockOffset {
	ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	opt := merge.ClockOptions{}
	if x.start != nil {
		// The check must not delay the common start: it gets the time
		// until then, less a margin, at most its default.
		left := time.Until(*x.start) - 300*time.Millisecond
		if left < 200*time.Millisecond {
			fmt.Fprintf(cmd.ErrOrStderr(), "shard %d/%d: no time for a clock check before --start-at\n", x.shard.Index, x.shard.Count)
			return nil
		}
		opt.Budget = min(left, 3*time.Second)
	}
	c, err := merge.EstimateOffset(ctx, merge.HTTPDateProbe(client, target), merge.SystemClock{}, opt)
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "shard %d/%d: clock offset against %s not measured: %v\n", x.shard.Index, x.shard.Count, openai.Redact(target), err)
		return nil
	}
	if !quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "shard %d/%d: clock offset against the target %+.1f ± %.1f ms (%d probes)\n", x.shard.Index, x.shard.Count, c.OffsetMS, c.UncertaintyMS, c.Probes)
	}
	return &c
}

// wait sleeps until start, or fails when start is too far in the past.
func (x *shardExt) wait(ctx context.Context, cmd *cobra.Command, start time.Time, quiet bool) error {
	d := time.Until(start)
	if d < -x.lateMax {
		return fmt.Errorf("--start-at %s was %.1f s ago, more than --start-late-max %s: the other shards have started without this one; give a later start time", start.Format(time.RFC3339), -d.Seconds(), x.lateMax)
	}
	if d <= 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "--start-at: starting %.3f s late\n", -d.Seconds())
		return nil
	}
	if !quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "--start-at: waiting %.1f s until %s\n", d.Seconds(), start.Format(time.RFC3339Nano))
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

func (x *shardExt) finish(cmd *cobra.Command, _ *runFlags, res *result.Result, out string) error {
	if x.sharded {
		res.Shard = &result.Shard{
			Index: x.shard.Index, Count: x.shard.Count,
			Experiment: merge.Experiment(res, x.shard.Count),
			StartAt:    x.start, Clock: x.clock,
		}
		if out != "" {
			if err := result.Write(out, res); err != nil {
				return err
			}
		}
	}
	if x.resultStdout {
		return result.Encode(cmd.OutOrStdout(), res)
	}
	return nil
}
