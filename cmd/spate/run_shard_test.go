package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/longtest"
	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/shard/merge"
	"github.com/spate-dev/spate/result"
	"github.com/spate-dev/spate/sim"
)

// startShardSim serves the simulator on loopback in-process and returns
// its base URL.
func startShardSim(t *testing.T, cfg sim.Config) string {
	t.Helper()
	_, target := startSim(t, cfg)
	return target
}

// shardArgs is the load every shard of these tests is cut from: 90
// Poisson requests at 60/s. The subject is the merge's arithmetic, not
// timing: --allow-invalid, as a shard of 30 requests is invalid when one
// first token read 1 ms late moves its p99.9 (seen in CI under a full
// suite: "stage main: reader_lag", exit 4); TestMergeExitCodes covers
// validity.
func shardArgs(target string) []string {
	return []string{"run", "--target", target, "--model", sim.DefaultModel, "--rate", "60", "--arrival", "poisson",
		"--requests", "90", "--warmup", "200ms", "--input-tokens", "24", "--output-tokens", "6", "--seed", "5",
		"--threshold", "p99(ttft) < 1ms", "--threshold", "rps > 40", "--lag-bound", "250ms", "--allow-invalid", "--quiet"}
}

// checkMerged checks a merged result against its shards: counts are the
// sums, every histogram is the bucket-wise sum of the shards' (built here
// independently) and every figure is that histogram's.
func checkMerged(t *testing.T, m *result.Result, shards []*result.Result, total int) {
	t.Helper()
	if m.Shard == nil || m.Shard.Count != len(shards) || len(m.Shard.Missing) != 0 || len(m.Scenarios) != 1 {
		t.Fatalf("merged shard section %+v, %d scenarios", m.Shard, len(m.Scenarios))
	}
	sc := m.Scenarios[0]
	var req, ok, warm int
	var out int64
	var sent, rate float64
	for _, s := range shards {
		x := s.Scenarios[0]
		req += x.Requests.Total
		ok += x.Requests.Succeeded
		warm += x.Requests.Warmup
		out += x.Tokens.Output
		rate += x.Load.TargetRate
		for _, v := range x.Series.SentPerS {
			sent += float64(v)
		}
	}
	if sc.Requests.Total != total || req != total || sc.Requests.Succeeded != ok || sc.Requests.Warmup != warm || sc.Tokens.Output != out {
		t.Fatalf("merged requests %+v tokens %d; shards sum to total %d succeeded %d warm-up %d tokens %d, want total %d",
			sc.Requests, sc.Tokens.Output, req, ok, warm, out, total)
	}
	if rate != 60 || sc.Load.TargetRate != 60 {
		t.Fatalf("target rate: shards sum to %v, merged %v, want 60", rate, sc.Load.TargetRate)
	}
	var msent float64
	for _, v := range sc.Series.SentPerS {
		msent += float64(v)
	}
	if msent != sent {
		t.Fatalf("merged series sent %v, shards %v", msent, sent)
	}
	for _, k := range []string{metrics.TTFT, metrics.E2E, metrics.ITL, metrics.TPOT, metrics.E2EIntended, metrics.TTFTIntended} {
		refHist, err := metrics.Decode(shards[0].Histograms[sc.Name][k])
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		var counts int64 = shards[0].Scenarios[0].Metrics[k].Count
		for _, s := range shards[1:] {
			h, err := metrics.Decode(s.Histograms[sc.Name][k])
			if err != nil {
				t.Fatal(err)
			}
			refHist.Merge(h)
			counts += s.Scenarios[0].Metrics[k].Count
		}
		want := metrics.Summarize(refHist, 1000)
		if got := sc.Metrics[k]; got != want || got.Count != counts || refHist.TotalCount() != counts || counts == 0 {
			t.Errorf("%s: merged %+v\nfrom the merged histograms %+v (shards' counts sum to %d)", k, got, want, counts)
		}
	}
	var th string
	for _, o := range sc.Thresholds {
		th += fmt.Sprintf("%s=%v/%v ", o.Expr, o.Value, o.Pass)
	}
	// An open loop judges TTFT from the intended send time: the p99 of
	// ttft_intended_ms, which equals TTFT's only when no send was late
	// (in CI 15.055 against 15.007).
	if len(sc.Thresholds) != 2 || sc.Thresholds[0].From != "intended" || sc.Thresholds[0].Value != sc.Metrics[metrics.TTFTIntended].P99 ||
		sc.Thresholds[0].Pass || sc.Metrics[metrics.TTFTIntended].Count == 0 ||
		sc.Thresholds[1].Value != sc.Throughput.RequestsPerS || m.ThresholdsPassed {
		t.Fatalf("thresholds on the merged data: %s (p99 ttft from the intended time %v, rps %v)", th, sc.Metrics[metrics.TTFTIntended].P99, sc.Throughput.RequestsPerS)
	}
}

// TestShardRunsMerge runs three shards at once in-process against the
// simulator, with a common --start-at, and merges them.
func TestShardRunsMerge(t *testing.T) {
	longtest.Skip(t)
	target := startShardSim(t, sim.Deterministic(15*time.Millisecond, 2*time.Millisecond, 0))
	dir := t.TempDir()
	start := time.Now().Add(5 * time.Second).UTC().Format(time.RFC3339Nano)
	const n = 3
	paths := make([]string, n)
	type run struct {
		code           int
		stdout, stderr string
	}
	runs := make([]run, n)
	var wg sync.WaitGroup
	for i := range n {
		paths[i] = filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		args := append(shardArgs(target), "--shard", fmt.Sprintf("%d/%d", i, n), "--start-at", start, "--out", paths[i])
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, so, se := cli(t, context.Background(), args...)
			runs[i] = run{code, so, se}
		}()
	}
	wg.Wait()
	var shards []*result.Result
	for i, r := range runs {
		// A shard evaluates no thresholds: its rps is a third of the run's.
		if r.code != 0 {
			t.Fatalf("shard %d: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
		s := readResult(t, paths[i])
		if s.Shard == nil || s.Shard.Index != i || s.Shard.Count != n || s.Shard.Experiment == "" || s.Shard.StartAt == nil {
			t.Fatalf("shard %d: shard section %+v", i, s.Shard)
		}
		if c := s.Shard.Clock; c == nil || c.UncertaintyMS > 100 || c.OffsetMS-c.UncertaintyMS > 1 || c.OffsetMS+c.UncertaintyMS < -1 {
			// Same machine: the true offset is 0.
			t.Fatalf("shard %d: clock offset %+v, want 0 within its uncertainty (< 100 ms)\n%s", i, c, r.stderr)
		}
		if st := s.Scenarios[0].StartedAt; st.Sub(*s.Shard.StartAt) < 0 || st.Sub(*s.Shard.StartAt) > 500*time.Millisecond {
			t.Fatalf("shard %d started %v after --start-at", i, st.Sub(*s.Shard.StartAt))
		}
		shards = append(shards, s)
	}
	out := filepath.Join(dir, "merged.json")
	code, stdout, stderr := cli(t, context.Background(), append([]string{"merge", "-o", out}, paths...)...)
	if code != exitThreshold {
		t.Fatalf("merge: exit %d, want 3 (p99(ttft) < 1ms fails)\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "merged 3 shard(s) of 3") {
		t.Fatalf("merge summary:\n%s", stdout)
	}
	checkMerged(t, readResult(t, out), shards, 90)
	t.Logf("merged: %s", strings.TrimSpace(stdout[strings.LastIndex(stdout[:len(stdout)-1], "\n")+1:]))

	// The same shards merged twice over: refused.
	code, _, stderr = cli(t, context.Background(), "merge", "-o", filepath.Join(dir, "dup.json"), paths[0], paths[1], paths[1], paths[2])
	if code != exitError || !strings.Contains(stderr, "more than once") {
		t.Fatalf("duplicate shard: exit %d %s", code, stderr)
	}
	// One missing: refused (exit 1), no file written.
	part := filepath.Join(dir, "part.json")
	code, _, stderr = cli(t, context.Background(), "merge", "-q", "-o", part, paths[0], paths[2])
	if _, err := os.Stat(part); code != exitError || !strings.Contains(stderr, "shard(s) 1 of 3 missing") || !strings.Contains(stderr, "--allow-partial") || err == nil {
		t.Fatalf("missing shard: exit %d %s (file written: %v)", code, stderr, err == nil)
	}
	// With --allow-partial: merged, reported (exit 3: the threshold fails).
	code, _, stderr = cli(t, context.Background(), "merge", "-q", "--allow-partial", "-o", part, paths[0], paths[2])
	if code != exitThreshold || !strings.Contains(stderr, "shard(s) 1 of 3 missing") {
		t.Fatalf("missing shard, --allow-partial: exit %d %s", code, stderr)
	}
	// A duplicate with --allow-partial: merged once.
	code, _, stderr = cli(t, context.Background(), "merge", "-q", "--allow-partial", "-o", filepath.Join(dir, "dup.json"), paths[0], paths[1], paths[1], paths[2])
	if code != exitThreshold || !strings.Contains(stderr, "merged once each") {
		t.Fatalf("duplicate shard, --allow-partial: exit %d %s", code, stderr)
	}
	checkMerged(t, readResult(t, filepath.Join(dir, "dup.json")), shards, 90)
}

func TestShardFlags(t *testing.T) {
	target := startShardSim(t, sim.Deterministic(time.Millisecond, time.Millisecond, 2))
	dir := t.TempDir()
	base := []string{"run", "--target", target, "--model", sim.DefaultModel, "--rate", "50", "--requests", "6", "--quiet", "--clock-check=false", "--lag-bound", "250ms", "--allow-invalid"}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		err  string
	}{
		{"index out of range", nil, []string{"--shard", "3/3"}, exitUsage, "--shard"},
		{"not a shard", nil, []string{"--shard", "x"}, exitUsage, "INDEX/COUNT"},
		{"count disagrees", nil, []string{"--shard", "0/3", "--shards", "2"}, exitUsage, "says 3 shards"},
		{"job index without count", map[string]string{"JOB_COMPLETION_INDEX": "1"}, nil, exitUsage, "SPATE_SHARDS"},
		{"count without index", map[string]string{"SPATE_SHARDS": "2"}, nil, exitUsage, "without a shard index"},
		{"too few requests", nil, []string{"--shard", "0/7"}, exitUsage, "6 requests cannot be split over 7 shards"},
		{"too little concurrency", nil, []string{"--shard", "0/3", "--rate", "0", "--concurrency", "2"}, exitUsage, "concurrency of 2"},
		{"start long past", nil, []string{"--shard", "0/2", "--start-at", time.Now().Add(-time.Minute).Format(time.RFC3339)}, exitError, "--start-late-max"},
		{"bad start", nil, []string{"--shard", "0/2", "--start-at", "tomorrow"}, exitUsage, "RFC 3339"},
		{"indexed job", map[string]string{"JOB_COMPLETION_INDEX": "1", "SPATE_SHARDS": "2"}, nil, 0, ""},
		{"indexed job, --shards", map[string]string{"JOB_COMPLETION_INDEX": "1"}, []string{"--shards", "2"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			out := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".json")
			args := append(append(append([]string{}, base...), tt.args...), "--out", out)
			code, stdout, stderr := cli(t, context.Background(), args...)
			if code != tt.code || !strings.Contains(stderr, tt.err) {
				t.Fatalf("exit %d, want %d; stderr %q should hold %q\n%s", code, tt.code, stderr, tt.err, stdout)
			}
			if tt.code != 0 {
				return
			}
			r := readResult(t, out)
			if r.Shard == nil || r.Shard.Index != 1 || r.Shard.Count != 2 || r.Shard.Clock != nil {
				t.Fatalf("shard section %+v", r.Shard)
			}
			// Shard 1 of 2 sends the odd-numbered half of the 6 requests.
			if sc := r.Scenarios[0]; sc.Requests.Total != 3 || sc.Load.TargetRate != 25 {
				t.Fatalf("requests %+v target rate %v", sc.Requests, sc.Load.TargetRate)
			}
		})
	}
}

// TestShardProcesses runs the real binary as two shard processes and one
// merge process, as on two machines.
func TestShardProcesses(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() {
		t.Skip("builds the spate binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "spate")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	target := startShardSim(t, sim.Deterministic(10*time.Millisecond, 2*time.Millisecond, 0))
	start := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	const n = 2
	var cmds []*exec.Cmd
	var paths []string
	var logs []*strings.Builder
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("shard-%d.log", i))
		paths = append(paths, p)
		args := append(shardArgs(target), "--start-at", start, "--result-stdout")
		c := exec.Command(bin, args...)
		// The default result file lands here, not in the source tree: a
		// directory per shard, as on two machines (two processes writing
		// one spate-results/result.json raced for its .tmp file).
		c.Dir = filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		if err := os.MkdirAll(c.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// As a Kubernetes Indexed Job sets them.
		c.Env = append(c.Environ(), fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i), fmt.Sprintf("SPATE_SHARDS=%d", n))
		var log strings.Builder
		c.Stdout, c.Stderr = &log, &log // one stream, as kubectl logs gives it
		logs = append(logs, &log)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, logs[i])
		}
		if err := os.WriteFile(paths[i], []byte(logs[i].String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "merged.json")
	so, err := exec.Command(bin, append([]string{"merge", "-o", out}, paths...)...).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitThreshold {
		t.Fatalf("merge: %v, want exit 3\n%s", err, so)
	}
	var shards []*result.Result
	for _, p := range paths {
		r, err := merge.Read(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, r)
	}
	checkMerged(t, readResult(t, out), shards, 90)
}

// TestMergeExitCodes: merge ends as one run of the whole load would. A shard
// whose measurement was invalid makes the merged run invalid: exit 4 (it
// exited 0, "thresholds: PASS", beside "measurement: INVALID"); an
// interrupted shard makes it an error, as an interrupted run is (exit 1,
// not 0); --allow-invalid on the shards accepts the invalid one (exit 0).
func TestMergeExitCodes(t *testing.T) {
	target := startShardSim(t, sim.Deterministic(time.Millisecond, time.Millisecond, 1))
	dir := t.TempDir()
	var paths []string
	for i := range 2 {
		p := filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		args := []string{"run", "--target", target, "--model", sim.DefaultModel, "--concurrency", "2", "--requests", "8", "--quiet",
			"--clock-check=false", "--threshold", "error_rate < 50%", "--shard", fmt.Sprintf("%d/2", i), "--out", p}
		// A busy machine can make a shard's own measurement invalid (exit
		// 4); the cases below set each shard's validity themselves.
		if code, so, se := cli(t, context.Background(), args...); code != 0 && code != exitInvalid {
			t.Fatalf("shard %d: exit %d\n%s\n%s", i, code, so, se)
		}
		paths = append(paths, p)
	}
	// edit writes both shards valid, then shard 1 changed by f (and both
	// by all, when given).
	edit := func(name string, f, all func(r *result.Result)) []string {
		var out []string
		for i, p := range paths {
			r := readResult(t, p)
			for j := range r.Scenarios {
				l := &r.Scenarios[j].Load
				l.Valid, l.InvalidCause, l.InvalidReason, l.Validity = true, "", "", nil
			}
			if all != nil {
				all(r)
			}
			if i == 1 {
				f(r)
			}
			out = append(out, filepath.Join(dir, fmt.Sprintf("%s-%d.json", name, i)))
			if err := result.Write(out[i], r); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	invalid := func(r *result.Result) {
		r.Scenarios[0].Load.Valid, r.Scenarios[0].Load.InvalidCause, r.Scenarios[0].Load.InvalidReason = false, "missed_sends", "3 sends missed"
	}
	for _, tc := range []struct {
		name   string
		shards []string
		code   int
		why    string
	}{
		{"valid", edit("valid", func(*result.Result) {}, nil), 0, ""},
		{"a shard invalid", edit("invalid", invalid, nil), exitInvalid, "no trustworthy verdict: stage main: missed_sends"},
		{"a shard invalid, accepted", edit("accepted", invalid, func(r *result.Result) { r.Config.AllowInvalid = true }), 0, ""},
		{"a shard interrupted", edit("interrupted", func(r *result.Result) { r.Interrupted = true }, nil), exitError, "a shard was interrupted"},
	} {
		code, _, stderr := cli(t, context.Background(), append([]string{"merge", "-q", "--force", "-o", filepath.Join(dir, "m-"+tc.name+".json")}, tc.shards...)...)
		if code != tc.code || !strings.Contains(stderr, tc.why) {
			t.Errorf("%s: exit %d (%s), want %d (%s)", tc.name, code, stderr, tc.code, tc.why)
		}
	}
}
