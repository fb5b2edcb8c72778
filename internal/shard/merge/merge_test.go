package merge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/verdict/threshold"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/result"
)

// indexSource labels each request with its global index.
var indexSource = workload.SourceFunc{
	Sha256: "index-source",
	F: func(n uint64) (*workload.Request, error) {
		return &workload.Request{Prompt: strconv.FormatUint(n, 10), InputTokens: 10 + int(n%4)}, nil
	},
}

// synthClient answers at once with timings that depend only on the global
// request index: a request has the same TTFT, E2E, gaps, tokens and error
// whichever process sends it. Latency depends strongly on index mod 3, so
// with 3 shards every shard sees a different distribution and averaging
// their percentiles is far from the truth.
type synthClient struct{}

func (synthClient) Do(_ context.Context, req *workload.Request, rec *record.Record) {
	g, _ := strconv.Atoi(req.Prompt)
	ttft := time.Duration(5000+(g%3)*40000+(g%7)*300) * time.Microsecond
	rec.InputTokens = req.InputTokens
	// HTTP phases: every request's write and first byte, a connect for
	// one in 8 (the others reused a connection: absent).
	rec.Phases.Set(record.PhaseWrite, time.Duration(20+g%3)*time.Microsecond)
	rec.Phases.Set(record.PhaseFirstByte, ttft-time.Millisecond)
	if g%8 == 0 {
		rec.Phases.Set(record.PhaseConnect, time.Duration(100+(g%5)*10)*time.Microsecond)
	}
	if g%17 == 5 {
		rec.Fail(record.RateLimited, "slow down", rec.Sent.Add(2*time.Millisecond))
		return
	}
	rec.FirstToken = rec.Sent.Add(ttft)
	rec.OutputTokens, rec.Chunks, rec.OutputSource = 3+g%5, 3+g%5, record.TokensUsage
	// Exactly 6 tokens asked: answers of 3 to 5 are cut short (ending with
	// length, or stop every fourth), of 6 and 7 whole.
	rec.RequestedOutput, rec.ExactOutput, rec.FinishReason = 6, true, "length"
	if g%4 == 0 {
		rec.FinishReason = "stop"
	}
	at := rec.FirstToken
	for k := 1; k < rec.Chunks; k++ {
		gap := time.Duration(1000+(g%11)*150+k*10) * time.Microsecond
		rec.Gaps = append(rec.Gaps, gap)
		at = at.Add(gap)
	}
	rec.End = at.Add(time.Millisecond)
	rec.Model = "m"
}

// exactMetrics are the figures that depend only on what was sent, not on
// when the machine got round to it (intended-time figures include the
// real schedule lag, which differs from run to run).
var exactMetrics = []string{metrics.TTFT, metrics.E2E, metrics.TPOT, metrics.ITL, metrics.OutputTokens, metrics.InputTokens, metrics.TokensPerChunk}

func plan(shard runner.Shard, thresholds ...string) runner.Plan {
	p := runner.Plan{
		Stages: []runner.Stage{
			{Name: "open", Arrival: "poisson", Rate: 2000, Requests: 300, Warmup: 15 * time.Millisecond},
			{Name: "closed", Concurrency: 6, Requests: 120},
		},
		Source: indexSource, Client: synthClient{}, Seed: 9, Shard: shard,
		Config: result.Config{Seed: 9, Thresholds: thresholds, Rate: 2000},
	}
	p.Provenance.Model = "m"
	return p
}

// runShards runs the plan once unsharded and once per shard, marking each
// shard's result as spate run --shard does. The runs go side by side: the
// figures compared depend only on what was sent (synthClient), not on
// when.
func runShards(t *testing.T, n int, thresholds ...string) (*result.Result, []Input) {
	t.Helper()
	rs := runPlans(t, n+1, func(i int) runner.Plan {
		if i == n {
			return plan(runner.Shard{}, thresholds...)
		}
		return shardPlan(t, i, n, thresholds...)
	})
	return rs[n], shardInputs(rs[:n])
}

// shardRuns runs the plan once per shard, side by side, marking each
// shard's result as spate run --shard does.
func shardRuns(t *testing.T, n int, thresholds ...string) []Input {
	t.Helper()
	return shardInputs(runPlans(t, n, func(i int) runner.Plan { return shardPlan(t, i, n, thresholds...) }))
}

// shardPlan is shard i of n of the plan, its thresholds parsed.
func shardPlan(t *testing.T, i, n int, thresholds ...string) runner.Plan {
	p := plan(runner.Shard{Index: i, Count: n}, thresholds...)
	for _, ts := range thresholds {
		p.Thresholds = append(p.Thresholds, mustParse(t, ts))
	}
	return p
}

// runPlans runs plan(0) … plan(n−1) at once and returns their results.
// The tests compare what the runs sent, so every run must send its whole
// schedule: a machine that stalls a run past its schedule's grace makes it
// miss sends (its result says so), and then all run again, up to three
// times.
func runPlans(t *testing.T, n int, plan func(i int) runner.Plan) []*result.Result {
	t.Helper()
	for try := 1; ; try++ {
		plans := make([]runner.Plan, n)
		for i := range plans {
			plans[i] = plan(i)
		}
		rs, errs := make([]*result.Result, n), make([]error, n)
		var wg sync.WaitGroup
		for i := range plans {
			wg.Go(func() { rs[i], errs[i] = runner.Run(context.Background(), plans[i]) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		missed := missedSends(rs)
		if missed == "" {
			return rs
		}
		if try == 3 {
			t.Fatalf("runs missed sends three times, the machine stalling them past their grace: %s", missed)
		}
		t.Logf("try %d: %s; running them again", try, missed)
	}
}

// missedSends says which runs' scenarios missed sends of their schedule, or
// "" when none did.
func missedSends(rs []*result.Result) string {
	var out []string
	for i, r := range rs {
		for _, sc := range r.Scenarios {
			if sc.Load.Missed > 0 {
				out = append(out, fmt.Sprintf("run %d, scenario %s: %d missed", i, sc.Name, sc.Load.Missed))
			}
		}
	}
	return strings.Join(out, "; ")
}

// shardInputs marks each shard's result as spate run --shard does.
func shardInputs(rs []*result.Result) []Input {
	var in []Input
	for i, r := range rs {
		r.Shard = &result.Shard{Index: i, Count: len(rs), Experiment: Experiment(r, len(rs))}
		in = append(in, Input{Name: "shard-" + strconv.Itoa(i) + ".json", Result: r})
	}
	return in
}

// TestMergeEqualsSingleProcess: three shards merged give exactly the
// counts, token totals and percentiles of one process sending the same
// load, and a threshold the averaged percentile would pass fails on the
// merged one.
func TestMergeEqualsSingleProcess(t *testing.T) {
	// Each shard's p99(ttft) is one of ~7, ~47, ~87 ms; their average is
	// about 47 ms, the true p99 about 87 ms.
	const th = "p99(ttft) < 60ms"
	single, in := runShards(t, 3, th)
	m, err := Merge(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Scenarios) != 2 {
		t.Fatalf("merged %d scenarios", len(m.Scenarios))
	}
	if m.Shard == nil || m.Shard.Count != 3 || len(m.Shard.Missing) != 0 || len(m.Shard.Merged) != 3 {
		t.Fatalf("shard section %+v", m.Shard)
	}
	if m.Fingerprint != single.Fingerprint {
		t.Fatalf("fingerprint %s, single process %s", m.Fingerprint, single.Fingerprint)
	}
	for si, want := range single.Scenarios {
		got := m.Scenarios[si]
		t.Run(want.Name, func(t *testing.T) {
			if got.Name != want.Name {
				t.Fatalf("scenario %s, want %s", got.Name, want.Name)
			}
			w, g := want.Requests, got.Requests
			if g.Total != w.Total || g.Succeeded != w.Succeeded || g.Failed != w.Failed || g.Warmup != w.Warmup ||
				g.Errors["http_429"] != w.Errors["http_429"] || w.Failed == 0 {
				t.Fatalf("requests %+v, single process %+v", g, w)
			}
			if got.Tokens.Input != want.Tokens.Input || got.Tokens.Output != want.Tokens.Output ||
				got.Tokens.FromUsage != want.Tokens.FromUsage || got.Tokens.OutputSource != want.Tokens.OutputSource {
				t.Fatalf("tokens %+v, single process %+v", got.Tokens, want.Tokens)
			}
			if got.Goodput.Fraction != want.Goodput.Fraction {
				t.Fatalf("goodput %v, single process %v", got.Goodput.Fraction, want.Goodput.Fraction)
			}
			// Goodput from the intended send time depends on each shard's
			// lags: the merged one is the shards' added up (it was left 0,
			// and an open loop's goodput threshold, judged on it, failed).
			var goodI, done float64
			for _, x := range in {
				s := x.Result.Scenarios[si]
				n := float64(s.Requests.Succeeded + s.Requests.Failed)
				goodI, done = goodI+math.Round(s.Goodput.IntendedFraction*n), done+n
			}
			if got.Goodput.IntendedFraction != goodI/done || want.Goodput.IntendedFraction == 0 || got.Goodput.IntendedFraction == 0 {
				t.Fatalf("goodput from the intended time: merged %v, shards' %v, single process %v", got.Goodput.IntendedFraction, goodI/done, want.Goodput.IntendedFraction)
			}
			sumSent, wantSent := 0, 0
			for _, v := range got.Series.SentPerS {
				sumSent += v
			}
			for _, v := range want.Series.SentPerS {
				wantSent += v
			}
			if sumSent != wantSent {
				t.Fatalf("series: %d sent, single process %d", sumSent, wantSent)
			}
			for _, k := range exactMetrics {
				if got.Metrics[k] != want.Metrics[k] || want.Metrics[k].Count == 0 {
					t.Errorf("%s: merged %+v\nsingle process %+v", k, got.Metrics[k], want.Metrics[k])
				}
				if !sameHist(t, m.Histograms[want.Name][k], single.Histograms[want.Name][k]) {
					t.Errorf("%s: merged histogram differs from the single process's", k)
				}
			}
			// The merged summaries are those of the merged histograms.
			for k, d := range got.Metrics {
				h, err := metrics.Decode(m.Histograms[want.Name][k])
				if err != nil {
					t.Fatal(err)
				}
				if s := metrics.Summarize(h, scaleOf(k)); s != d {
					t.Errorf("%s: summary %+v, histogram says %+v", k, d, s)
				}
			}
			// The HTTP phases are merged the same way: their summaries are
			// the merged histograms', over the shards' requests added up,
			// and those of one process.
			ph, wph := got.Load.HTTPPhases, want.Load.HTTPPhases
			if ph == nil || ph.FirstByteMS == nil || ph.ConnectMS == nil || wph == nil || wph.FirstByteMS == nil || wph.ConnectMS == nil {
				t.Fatalf("merged http_phases %+v, single process %+v: want first byte and connect", ph, wph)
			}
			if *ph.FirstByteMS != *wph.FirstByteMS || *ph.ConnectMS != *wph.ConnectMS || ph.DNSMS != nil || ph.TLSMS != nil {
				t.Errorf("merged http_phases first byte %+v, connect %+v; single process %+v, %+v", *ph.FirstByteMS, *ph.ConnectMS, *wph.FirstByteMS, *wph.ConnectMS)
			}
			var fb int64
			for _, x := range in {
				if p := x.Result.Scenarios[si].Load.HTTPPhases; p != nil && p.FirstByteMS != nil {
					fb += p.FirstByteMS.Count
				}
			}
			if ph.FirstByteMS.Count != fb || fb == 0 {
				t.Errorf("merged first_byte_ms over %d requests, the shards' add up to %d", ph.FirstByteMS.Count, fb)
			}
			for k, d := range map[string]*result.Dist{metrics.PhaseKeys[record.PhaseFirstByte]: ph.FirstByteMS, metrics.PhaseKeys[record.PhaseConnect]: ph.ConnectMS} {
				h, err := metrics.Decode(m.Histograms[want.Name][k])
				if err != nil {
					t.Fatal(err)
				}
				if s := metrics.Summarize(h, scaleOf(k)); s != *d {
					t.Errorf("%s: summary %+v, histogram says %+v", k, *d, s)
				}
			}
			// Averaging the shards' p99 would be far off: this is what the
			// merge must not do.
			var avg float64
			for _, x := range in {
				avg += x.Result.Scenarios[si].Metrics[metrics.TTFT].P99 / 3
			}
			if p99 := got.Metrics[metrics.TTFT].P99; math.Abs(p99-avg) < 20 {
				t.Fatalf("test is too weak: merged p99 %.1f ms, average of shards' p99 %.1f ms", p99, avg)
			}
			// Judged as the single process judges it: an open loop's TTFT
			// from the intended send time.
			judged, from := metrics.TTFT, ""
			if got.Load.Mode == "open" {
				judged, from = metrics.TTFTIntended, "intended"
			}
			if len(got.Thresholds) != 1 || got.Thresholds[0].Pass || got.Thresholds[0].Value != got.Metrics[judged].P99 || got.Thresholds[0].From != from {
				t.Fatalf("threshold on merged data: %+v (%s p99 %v)", got.Thresholds, judged, got.Metrics[judged].P99)
			}
			// The output figures add up to the single process's, the
			// context buckets' distributions too (warnings aside: each
			// shard's own are kept).
			if got.Output == nil || want.Output == nil || want.Output.Truncated == 0 || len(want.Output.Context) == 0 {
				t.Fatalf("output: merged %+v, single process %+v", got.Output, want.Output)
			}
			go2, wo := *got.Output, *want.Output
			go2.Warnings, wo.Warnings = nil, nil
			if !reflect.DeepEqual(go2, wo) {
				t.Errorf("output: merged %+v\nsingle process %+v", go2, wo)
			}
			if slices.ContainsFunc(got.Warnings, func(w string) bool { return strings.Contains(w, "not merged") && strings.Contains(w, "output") }) {
				t.Errorf("warnings %q: output is merged", got.Warnings)
			}
			if got.Load.TargetRate != want.Load.TargetRate || got.Load.Concurrency != want.Load.Concurrency {
				t.Fatalf("load target %v/%d, single process %v/%d", got.Load.TargetRate, got.Load.Concurrency, want.Load.TargetRate, want.Load.Concurrency)
			}
		})
	}
	if m.ThresholdsPassed {
		t.Fatal("merged thresholds passed: p99(ttft) is about 87 ms")
	}
}

func sameHist(t *testing.T, a, b string) bool {
	t.Helper()
	ha, err := metrics.Decode(a)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := metrics.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return ha.Equals(hb)
}

func TestMergeRefusesAndReports(t *testing.T) {
	base := shardRuns(t, 3)
	clone := func(in []Input) []Input {
		out := make([]Input, len(in))
		for i, x := range in {
			b, _ := json.Marshal(x.Result)
			var r result.Result
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			out[i] = Input{Name: x.Name, Result: &r}
		}
		return out
	}
	tests := []struct {
		name   string
		edit   func([]Input) []Input
		err    string // refused without --force
		forced bool
	}{
		{"different config", func(in []Input) []Input {
			in[1].Result.Config.Seed = 10
			in[1].Result.Shard.Experiment = Experiment(in[1].Result, 3)
			return in
		}, "different load settings", true},
		{"different fingerprint", func(in []Input) []Input { in[2].Result.Fingerprint = "0123456789abcdef"; return in }, "fingerprint", true},
		{"different count", func(in []Input) []Input {
			in[1].Result.Shard.Count = 4
			in[1].Result.Shard.Experiment = Experiment(in[1].Result, 4)
			return in
		}, "shard of 4", true},
		{"edited settings", func(in []Input) []Input { in[0].Result.Config.Rate = 1; return in }, "do not match the experiment id", true},
		{"duplicate", func(in []Input) []Input { return append(in, in[1]) }, "given more than once", true},
		{"not a shard", func(in []Input) []Input { in[0].Result.Shard = nil; return in }, "not a shard result", false},
	}
	// Each case merges its own copy of the shards: they run side by side.
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Merge(tt.edit(clone(base)), Options{})
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want one with %q", err, tt.err)
			}
			m, err := Merge(tt.edit(clone(base)), Options{Force: true})
			if tt.forced != (err == nil) {
				t.Fatalf("forced merge: %v", err)
			}
			if err == nil && (!m.Shard.Forced || !strings.Contains(strings.Join(m.Warnings, "\n"), "forced")) {
				t.Fatalf("forced merge not marked: %+v %q", m.Shard, m.Warnings)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		t.Parallel()
		in := clone(base)
		if _, err := Merge([]Input{in[0], in[2]}, Options{}); err == nil || !strings.Contains(err.Error(), "shard(s) 1 of 3 missing") || !strings.Contains(err.Error(), "--allow-partial") {
			t.Fatalf("a missing shard: err = %v, want a refusal naming it", err)
		}
		m, err := Merge([]Input{in[0], in[2]}, Options{AllowPartial: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Shard.Missing) != 1 || m.Shard.Missing[0] != 1 || !strings.Contains(strings.Join(m.Warnings, "\n"), "shard(s) 1 of 3 missing") {
			t.Fatalf("missing shard not reported: %+v %q", m.Shard, m.Warnings)
		}
		want := in[0].Result.Scenarios[0].Requests.Total + in[2].Result.Scenarios[0].Requests.Total
		if got := m.Scenarios[0].Requests.Total; got != want {
			t.Fatalf("total %d, want %d", got, want)
		}
	})
	t.Run("duplicate allowed as partial", func(t *testing.T) {
		t.Parallel()
		in := clone(base)
		m, err := Merge([]Input{in[0], in[1], in[1], in[2]}, Options{AllowPartial: true})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, x := range in {
			want += x.Result.Scenarios[0].Requests.Total
		}
		if got := m.Scenarios[0].Requests.Total; got != want || len(m.Shard.Merged) != 3 || m.Shard.Forced ||
			!strings.Contains(strings.Join(m.Warnings, "\n"), "merged once each") {
			t.Fatalf("total %d (want %d), shard %+v, warnings %q", got, want, m.Shard, m.Warnings)
		}
	})
}

func TestClockSpread(t *testing.T) {
	mk := func(offs ...float64) []Input {
		var in []Input
		for i := 0; i+1 < len(offs); i += 2 {
			r := &result.Result{Shard: &result.Shard{Index: i / 2, Count: len(offs) / 2}}
			if !math.IsNaN(offs[i]) {
				r.Shard.Clock = &result.ClockOffset{OffsetMS: offs[i], UncertaintyMS: offs[i+1]}
			}
			in = append(in, Input{Name: "s" + strconv.Itoa(i/2), Result: r})
		}
		return in
	}
	tests := []struct {
		name   string
		in     []Input
		warn   string
		spread float64
	}{
		{"agree", mk(3, 2, 10, 4, -20, 5), "", 30},
		{"apart but uncertain", mk(0, 1, 150, 60), "", 150},
		{"disagree", mk(0, 1, 300, 2), "clocks disagree", 300},
		{"one unknown", mk(0, 1, math.NaN(), 0), "1 shard(s) have no clock offset", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, spread := clockSpread(tt.in, DefaultMaxClockSpread)
			if (tt.warn == "") != (w == "") || !strings.Contains(w, tt.warn) {
				t.Fatalf("warning %q, want %q", w, tt.warn)
			}
			if spread == nil || *spread != tt.spread {
				t.Fatalf("spread %v, want %v", spread, tt.spread)
			}
		})
	}
	if w, s := clockSpread(mk(math.NaN(), 0), DefaultMaxClockSpread); w != "" || s != nil {
		t.Fatalf("no estimates: %q %v", w, s)
	}
}

func TestMergeSeries(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := result.Series{
		SentPerS: []int{4, 4}, CompletedPerS: []int{2, 4}, ErrorsPerS: []int{0, 2}, InFlight: []int{3, 2},
		OutputTokens: []int64{10, 20}, TTFTp50ms: []float64{10, 12}, TTFTp99ms: []float64{30, 40},
		TTFTMeanMS: []float64{10, 20}, E2Ep50ms: []float64{50, 60}, E2Ep99ms: []float64{70, 90}, E2EMeanMS: []float64{50, 60},
	}
	b := result.Series{
		SentPerS: []int{1, 1}, CompletedPerS: []int{0, 2}, ErrorsPerS: []int{0, 0}, InFlight: []int{1, 1},
		OutputTokens: []int64{0, 5}, TTFTp50ms: []float64{0, 30}, TTFTp99ms: []float64{0, 35},
		TTFTMeanMS: []float64{0, 50}, E2Ep50ms: []float64{0, 80}, E2Ep99ms: []float64{0, 85}, E2EMeanMS: []float64{0, 90},
	}
	// b starts 1.02 s after a: its second 0 is the merged second 1.
	got, skew := mergeSeries([]seriesPart{{t0, a}, {t0.Add(1020 * time.Millisecond), b}}, t0)
	want := result.Series{
		SentPerS: []int{4, 5, 1}, CompletedPerS: []int{2, 4, 2}, ErrorsPerS: []int{0, 2, 0}, InFlight: []int{3, 3, 1},
		OutputTokens: []int64{10, 20, 5}, TTFTp50ms: []float64{10, 12, 30}, TTFTp99ms: []float64{30, 40, 35},
		// second 1: a has 4 completions at mean 20, b none: 20. E2E: a's 2
		// successes at 60.
		TTFTMeanMS: []float64{10, 20, 50}, E2Ep50ms: []float64{50, 60, 80}, E2Ep99ms: []float64{70, 90, 85}, E2EMeanMS: []float64{50, 60, 90},
	}
	if skew != 20*time.Millisecond {
		t.Fatalf("skew %v, want 20ms", skew)
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Fatalf("merged series\n%s\nwant\n%s", gj, wj)
	}
	// Same second: means weighted by completions (TTFT) and successes (E2E).
	got, _ = mergeSeries([]seriesPart{{t0, a}, {t0, b}}, t0)
	if m := got.TTFTMeanMS[1]; m != (4*20+2*50)/6.0 {
		t.Fatalf("ttft mean %v, want %v", m, (4*20+2*50)/6.0)
	}
	if m := got.E2EMeanMS[1]; m != (2*60+2*90)/4.0 {
		t.Fatalf("e2e mean %v, want %v", m, (2*60+2*90)/4.0)
	}
}

// FuzzMerge: whatever two result files hold, a merge returns an error or a
// result, never panics.
func FuzzMerge(f *testing.F) {
	f.Add([]byte(`{"shard":{"index":0,"count":2},"scenarios":[{"name":"a"}]}`), []byte(`{"shard":{"index":1,"count":2},"scenarios":[{"name":"b","series":{"sent_per_s":[1,2]}}],"histograms":{"b":{"ttft_ms":"x"}}}`))
	f.Add([]byte(`{}`), []byte(`{"shard":{"index":-1}}`))
	f.Add([]byte(`{"shard":{"index":0,"count":2},"scenarios":[{"name":"a","started_at":"0001-01-01T00:00:00Z","series":{"sent_per_s":[1]}}]}`), []byte(`{"shard":{"index":1,"count":2},"scenarios":[{"name":"a","started_at":"9999-01-01T00:00:00Z","series":{"sent_per_s":[1]}}]}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var ra, rb result.Result
		if json.Unmarshal(a, &ra) != nil || json.Unmarshal(b, &rb) != nil {
			return
		}
		_, _ = Merge([]Input{{"a", &ra}, {"b", &rb}}, Options{Force: true})
	})
}

func mustParse(t *testing.T, expr string) threshold.Threshold {
	t.Helper()
	th, err := threshold.Parse(expr)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func TestMergeRefusesFarApartStarts(t *testing.T) {
	mk := func(i int, start time.Time) Input {
		r := &result.Result{Schema: result.Schema, Shard: &result.Shard{Index: i, Count: 2},
			Scenarios: []result.Scenario{{Name: "s", StartedAt: start, Series: result.Series{SentPerS: []int{1}}}}}
		r.Shard.Experiment = Experiment(r, 2)
		return Input{Name: strconv.Itoa(i), Result: r}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := Merge([]Input{mk(0, t0), mk(1, t0.AddDate(10, 0, 0))}, Options{Force: true}); err == nil || !strings.Contains(err.Error(), "not shards of one run") {
		t.Fatalf("err %v", err)
	}
	m, err := Merge([]Input{mk(0, t0), mk(1, t0.Add(2*time.Second))}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Scenarios[0].Series.SentPerS; len(got) != 3 || got[0] != 1 || got[2] != 1 {
		t.Fatalf("series %v", got)
	}
}

// lateClient is synthClient with its reads' lateness measured: every
// request's reads 0.1 ms late, and every 40th's first token late (a
// shared late read, as the reactor counts it).
type lateClient struct{ synthClient }

func (c lateClient) Do(ctx context.Context, req *workload.Request, rec *record.Record) {
	c.synthClient.Do(ctx, req, rec)
	g, _ := strconv.Atoi(req.Prompt)
	rec.ReadLag = 100 * time.Microsecond
	if g%40 == 7 && rec.Chunks > 1 {
		rec.LateFirst, rec.FirstBound, rec.LateEvents, rec.LateGaps = true, 2*time.Millisecond, 1, 1
	}
}

// TestMergeAddsLateReadsUp: the late reads of shards add up to the single
// process's: the late shares, the read lag and the measurement error's
// late counts (three shards of 300 requests, each with two or three late
// first tokens, against the single process's eight). Late reads never
// make a stage invalid, merged or not.
func TestMergeAddsLateReadsUp(t *testing.T) {
	const n = 3
	mk := func(shard runner.Shard) runner.Plan {
		p := plan(shard)
		p.Stages, p.Client = p.Stages[:1], lateClient{}
		return p
	}
	rs := runPlans(t, n+1, func(i int) runner.Plan {
		if i == n {
			return mk(runner.Shard{})
		}
		return mk(runner.Shard{Index: i, Count: n})
	})
	single := rs[n].Scenarios[0]
	for i, r := range rs[:n] {
		l := r.Scenarios[0].Load
		if l.LateFirstTokens == nil || *l.LateFirstTokens == 0 || r.Scenarios[0].MeasurementError == nil {
			t.Fatalf("shard %d: late first tokens %v, error %+v: want a few late", i, l.LateFirstTokens, r.Scenarios[0].MeasurementError)
		}
	}
	out, err := Merge(shardInputs(rs[:n]), Options{})
	if err != nil {
		t.Fatal(err)
	}
	merged := out.Scenarios[0]
	got := merged.Load
	if strings.Contains(got.InvalidReason, "merged: ") {
		t.Fatalf("merged: %q: late reads do not make the merged stage invalid", got.InvalidReason)
	}
	for _, f := range []struct {
		name      string
		got, want *float64
	}{{"late_events", got.LateEvents, single.Load.LateEvents}, {"late_first_tokens", got.LateFirstTokens, single.Load.LateFirstTokens}, {"late_gaps", got.LateGaps, single.Load.LateGaps}} {
		if f.got == nil || f.want == nil || *f.got != *f.want {
			t.Errorf("%s: merged %v, single process %v", f.name, f.got, f.want)
		}
	}
	if got.ReadLagMS == nil || single.Load.ReadLagMS == nil || *got.ReadLagMS != *single.Load.ReadLagMS {
		t.Errorf("read lag: merged %+v, single process %+v", got.ReadLagMS, single.Load.ReadLagMS)
	}
	if merged.MeasurementError == nil || single.MeasurementError == nil {
		t.Fatalf("measurement error: merged %+v, single process %+v", merged.MeasurementError, single.MeasurementError)
	}
	for _, k := range []string{metrics.TTFT, metrics.ITL} {
		m, s := merged.MeasurementError.Figures[k], single.MeasurementError.Figures[k]
		if m.Late != s.Late || m.Count != s.Count || m.BoundMS != s.BoundMS || m.Late == 0 {
			t.Errorf("%s error: merged %+v, single process %+v", k, m, s)
		}
	}
}

// shiftClient answers every request with a 10 ms TTFT but three: request 0's
// first token is stamped at 40 ms by a late read (bound 30 ms: it may have
// come at 10 ms), requests 2 and 4 come at 50 ms, on time. With two shards
// all three go to shard 0.
type shiftClient struct{}

func (shiftClient) Do(_ context.Context, req *workload.Request, rec *record.Record) {
	g, _ := strconv.Atoi(req.Prompt)
	ttft := 10 * time.Millisecond
	switch g {
	case 0:
		ttft = 40 * time.Millisecond
		rec.LateFirst, rec.FirstBound, rec.LateEvents = true, 30*time.Millisecond, 1
	case 2, 4:
		ttft = 50 * time.Millisecond
	}
	rec.FirstToken = rec.Sent.Add(ttft)
	rec.Gaps = append(rec.Gaps, time.Millisecond)
	rec.End = rec.FirstToken.Add(time.Millisecond)
	rec.OutputTokens, rec.Chunks, rec.OutputSource, rec.ReadLag = 2, 2, record.TokensUsage, 100*time.Microsecond
	rec.Model = "m"
}

// TestMergeBoundsLateFirstTokensOnMergedTTFT: a late first token that
// moves no figure of its shard's TTFT can move the merged one. Shard 0 has
// 1,000 requests: 997 at 10 ms, the late one at 40 ms and two at 50 ms, so
// its p99.9 (the 999th) is 50 ms however early the late one came: exact.
// Shard 1's 1,000 on-time requests at 10 ms push the late one to the
// merged p99.9 (the 1,998th of 2,000), whose true value then lies in
// [10, 40] ms, as the single process's does; a threshold between the two
// cannot be judged.
func TestMergeBoundsLateFirstTokensOnMergedTTFT(t *testing.T) {
	mk := func(shard runner.Shard) runner.Plan {
		p := plan(shard)
		// A closed loop sends every request however busy the machine (an
		// open loop at 8,000 req/s missed 1,221 under three suites).
		p.Stages = []runner.Stage{{Name: "closed", Concurrency: 8, Requests: 2000}}
		p.Client = shiftClient{}
		return p
	}
	rs := runPlans(t, 3, func(i int) runner.Plan {
		if i == 2 {
			return mk(runner.Shard{})
		}
		return mk(runner.Shard{Index: i, Count: 2})
	})
	p999 := func(sc *result.Scenario, hist map[string]string) (lo, hi float64) {
		v, _ := metrics.Lookup(sc, hist, "percentile", 99.9, "ttft")
		lo, hi, ok := metrics.Bounds(sc, hist, "percentile", 99.9, "ttft")
		if !ok {
			return v, v
		}
		return lo, hi
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 0.1 }
	for i, r := range rs[:2] {
		if sc := r.Scenarios[0]; sc.Requests.Succeeded != 1000 {
			t.Fatalf("shard %d: %d requests, want 1,000", i, sc.Requests.Succeeded)
		}
	}
	if lo, hi := p999(&rs[0].Scenarios[0], rs[0].Histograms["closed"]); !near(lo, 50) || !near(hi, 50) {
		t.Fatalf("shard 0's TTFT p99.9 in [%.2f, %.2f] ms, want exactly 50", lo, hi)
	}
	if lo, hi := p999(&rs[2].Scenarios[0], rs[2].Histograms["closed"]); !near(lo, 10) || !near(hi, 40) {
		t.Fatalf("single process: TTFT p99.9 in [%.2f, %.2f] ms, want [10, 40]", lo, hi)
	}
	out, err := Merge(shardInputs(rs[:2]), Options{})
	if err != nil {
		t.Fatal(err)
	}
	sc, hist := &out.Scenarios[0], out.Histograms["closed"]
	if lo, hi := p999(sc, hist); !near(lo, 10) || !near(hi, 40) {
		t.Fatalf("merged: TTFT p99.9 in [%.2f, %.2f] ms, want [10, 40] as the single process's", lo, hi)
	}
	th, err := threshold.Parse("p99.9(ttft) < 20ms")
	if err != nil {
		t.Fatal(err)
	}
	if o := th.Eval(metrics.Source{Scenario: sc, Hists: hist}); !o.Unjudged || o.Pass {
		t.Fatalf("merged: %+v: want p99.9(ttft) < 20ms unjudged (its true value lies in [10, 40] ms)", o)
	}
}

// liarClient streams one token and claims 128 in usage; every 16th
// request (by global index) is counted locally too.
type liarClient struct{}

func (liarClient) Do(_ context.Context, req *workload.Request, rec *record.Record) {
	g, _ := strconv.Atoi(req.Prompt)
	rec.FirstToken = rec.Sent.Add(time.Millisecond)
	rec.End = rec.FirstToken.Add(time.Millisecond)
	rec.Chunks, rec.UsageTokens, rec.OutputTokens, rec.OutputSource = 1, 128, 128, record.TokensUsage
	if g%16 == 0 {
		rec.TokenizerTokens = 1
	}
	rec.Model = "m"
}

// TestMergeJudgesUsageOnAllShards: the usage check's counts add up over
// the shards to the single process's, the merged stage's usage is
// untrusted as each shard's is, and a threshold on output_tps cannot be
// judged on the merged figures either.
func TestMergeJudgesUsageOnAllShards(t *testing.T) {
	const n = 3
	mk := func(shard runner.Shard) runner.Plan {
		p := plan(shard, "output_tps > 10")
		p.Stages, p.Client = p.Stages[1:], liarClient{}
		p.Thresholds = append(p.Thresholds, mustParse(t, "output_tps > 10"))
		return p
	}
	rs := runPlans(t, n+1, func(i int) runner.Plan {
		if i == n {
			return mk(runner.Shard{})
		}
		return mk(runner.Shard{Index: i, Count: n})
	})
	single := rs[n].Scenarios[0].Tokens
	if single.UsageTrusted == nil || *single.UsageTrusted || single.UsageImplausible != 120/16+1 {
		t.Fatalf("single process: tokens %+v, want 8 implausible, untrusted", single)
	}
	out, err := Merge(shardInputs(rs[:n]), Options{})
	if err != nil {
		t.Fatal(err)
	}
	sc := out.Scenarios[0]
	got := sc.Tokens
	if got.UsageTrusted == nil || *got.UsageTrusted || got.UsageImplausible != single.UsageImplausible ||
		got.UsageClaimed != single.UsageClaimed || got.UsageCounted != single.UsageCounted || got.UsageUntrusted != single.UsageUntrusted {
		t.Fatalf("merged tokens %+v, single process %+v", got, single)
	}
	if len(sc.Thresholds) != 1 || !sc.Thresholds[0].Unjudged || !strings.Contains(sc.Thresholds[0].Err, "untrusted: 8 of 8 responses") {
		t.Fatalf("merged thresholds %+v", sc.Thresholds)
	}
}
