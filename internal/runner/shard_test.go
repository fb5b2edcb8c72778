package runner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/engine"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/schedule"
	"github.com/spate-dev/spate/internal/workload"
)

// indexSource labels each request with its index, so a shard's requests
// can be mapped back to the global ones.
var indexSource = workload.SourceFunc{
	Sha256: "index-source",
	F: func(n uint64) (*workload.Request, error) {
		return &workload.Request{Prompt: strconv.FormatUint(n, 10)}, nil
	},
}

// sentReq is one request of a schedule: which workload request, when, and
// whether it was warm-up.
type sentReq struct {
	req  string
	off  time.Duration
	warm bool
}

// schedulePlan replays the engine's open-loop decisions (engine.openLoop)
// without sending: what is sent, at which offset, and what is warm-up.
func schedulePlan(t *testing.T, c engine.Config) []sentReq {
	t.Helper()
	var out []sentReq
	end := c.Warmup + c.Duration
	measured := 0
	var prev time.Duration
	for n := uint64(0); ; n++ {
		off := c.Pacer.Pace(n, prev)
		if off < prev {
			t.Fatalf("pacer went back in time at %d", n)
		}
		prev = off
		if c.Duration > 0 && off >= end {
			return out
		}
		warm := off < c.Warmup
		if !warm {
			if c.Requests > 0 && measured >= c.Requests {
				return out
			}
			measured++
		}
		r, err := c.Source.Request(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sentReq{r.Prompt, off, warm})
		if len(out) > 1e6 {
			t.Fatal("schedule does not end")
		}
	}
}

func openConfig(t *testing.T, st Stage, seed uint64) engine.Config {
	t.Helper()
	p, err := stagePacer(st, seed, nil)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Config{Pacer: p, Duration: st.Duration, Requests: st.Requests, Warmup: st.Warmup,
		MaxConcurrency: st.MaxConcurrency, Source: indexSource}
}

func sortReqs(rs []sentReq) {
	slices.SortFunc(rs, func(a, b sentReq) int {
		x, _ := strconv.Atoi(a.req)
		y, _ := strconv.Atoi(b.req)
		return x - y
	})
}

// TestShardScheduleUnion: for every arrival process, ramp, warm-up and
// end condition, the union of N shards' schedules is exactly the single
// process's schedule for the same seed: the same requests at the same
// offsets with the same warm-up marks.
func TestShardScheduleUnion(t *testing.T) {
	stages := []Stage{
		{Name: "constant-duration", Arrival: "constant", Rate: 100, Duration: 2 * time.Second, Warmup: 500 * time.Millisecond},
		{Name: "constant-requests", Arrival: "constant", Rate: 50, Requests: 103, Warmup: 210 * time.Millisecond},
		{Name: "poisson-duration", Arrival: "poisson", Rate: 250, Duration: time.Second, Warmup: 300 * time.Millisecond},
		{Name: "poisson-requests", Arrival: "poisson", Rate: 400, Requests: 97, Warmup: 200 * time.Millisecond},
		{Name: "gamma-both", Arrival: "gamma", Rate: 300, Burstiness: 0.5, Requests: 101, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond},
		{Name: "gamma-regular", Arrival: "gamma", Rate: 80, Burstiness: 4, Duration: 3 * time.Second},
		{Name: "ramp-constant", Arrival: "constant", RampFrom: 10, Rate: 200, Duration: 2 * time.Second, Warmup: 250 * time.Millisecond},
		{Name: "ramp-poisson", Arrival: "poisson", RampFrom: 300, Rate: 20, Duration: 2 * time.Second},
		{Name: "ramp-poisson-requests", Arrival: "poisson", RampFrom: 5, Rate: 500, Requests: 150, Duration: 5 * time.Second},
	}
	for _, st := range stages {
		for _, n := range []int{1, 2, 3, 7} {
			t.Run(fmt.Sprintf("%s/%d", st.Name, n), func(t *testing.T) {
				const seed = 42
				want := schedulePlan(t, openConfig(t, st, seed))
				if len(want) < 20 {
					t.Fatalf("test schedule too short: %d requests", len(want))
				}
				var got []sentReq
				var rate float64
				for i := range n {
					sst, c := Shard{Index: i, Count: n}.apply(st, openConfig(t, st, seed))
					if c.Warmup != st.Warmup || c.Duration != st.Duration {
						t.Fatalf("shard %d changed warm-up or duration: %v %v", i, c.Warmup, c.Duration)
					}
					part := schedulePlan(t, c)
					if n > 1 && len(part) == len(want) {
						t.Fatalf("shard %d sent the whole schedule", i)
					}
					got = append(got, part...)
					rate += sst.Rate
				}
				if d := rate - st.Rate; d > 1e-9 || d < -1e-9 {
					t.Errorf("shards' target rates sum to %v, want %v", rate, st.Rate)
				}
				sortReqs(got)
				if !slices.Equal(got, want) {
					t.Fatalf("union of %d shards (%d requests) differs from the single schedule (%d requests); first: %v vs %v",
						n, len(got), len(want), head(got), head(want))
				}
			})
		}
	}
}

func head(rs []sentReq) []sentReq { return rs[:min(len(rs), 3)] }

// offsetClient records each request's workload index and intended offset.
type offsetClient struct {
	mu   sync.Mutex
	got  map[string]time.Time
	dups int
}

func (c *offsetClient) Do(_ context.Context, req *workload.Request, rec *record.Record) {
	c.mu.Lock()
	if _, ok := c.got[req.Prompt]; ok {
		c.dups++
	}
	c.got[req.Prompt] = rec.Intended
	c.mu.Unlock()
	rec.FirstToken = time.Now()
	rec.End = rec.FirstToken
}

type nopSink struct{}

func (nopSink) Sent(time.Time, time.Time, bool) {}
func (nopSink) Record(*record.Record)           {}

// TestShardEngineUnion runs the real engine once per shard and checks the
// requests sent and their intended offsets against the single schedule.
func TestShardEngineUnion(t *testing.T) {
	st := Stage{Name: "p", Arrival: "poisson", Rate: 3000, Requests: 240, Warmup: 10 * time.Millisecond}
	want := schedulePlan(t, openConfig(t, st, 7))
	const n = 3
	got := map[string]time.Duration{}
	for i := range n {
		cl := &offsetClient{got: map[string]time.Time{}}
		_, c := Shard{Index: i, Count: n}.apply(st, openConfig(t, st, 7))
		c.Client, c.Sink = cl, nopSink{}
		// The union is the point, not the deadline: a busy machine (or
		// -race) must not miss sends past the default grace.
		c.Grace = time.Minute
		out, err := engine.Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if cl.dups > 0 {
			t.Fatalf("shard %d sent %d requests twice", i, cl.dups)
		}
		for k, at := range cl.got {
			if _, ok := got[k]; ok {
				t.Fatalf("request %s sent by two shards", k)
			}
			got[k] = at.Sub(out.Start)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("shards sent %d requests, the single schedule %d", len(got), len(want))
	}
	for _, w := range want {
		if off, ok := got[w.req]; !ok || off != w.off {
			t.Fatalf("request %s: shard offset %v (sent %v), single schedule %v", w.req, off, ok, w.off)
		}
	}
}

// TestShardClosedLoop: concurrency and request counts are dealt out, and
// the shards together send each workload request once.
func TestShardClosedLoop(t *testing.T) {
	st := Stage{Name: "c", Concurrency: 7, Requests: 10}
	wantConc := []int{3, 2, 2}
	wantReq := []int{4, 3, 3}
	seen := map[string]int{}
	for i := range 3 {
		sst, c := Shard{Index: i, Count: 3}.apply(st, engine.Config{Concurrency: 7, Requests: 10, Source: indexSource})
		if c.Concurrency != wantConc[i] || sst.Concurrency != wantConc[i] || c.Requests != wantReq[i] || sst.Requests != wantReq[i] {
			t.Fatalf("shard %d: concurrency %d/%d requests %d/%d, want %d and %d", i, c.Concurrency, sst.Concurrency, c.Requests, sst.Requests, wantConc[i], wantReq[i])
		}
		cl := &offsetClient{got: map[string]time.Time{}}
		c.Client, c.Sink = cl, nopSink{}
		if _, err := engine.Run(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		for k := range cl.got {
			seen[k]++
		}
	}
	for g := range 10 {
		if seen[strconv.Itoa(g)] != 1 {
			t.Fatalf("request %d sent %d times over the shards (all: %v)", g, seen[strconv.Itoa(g)], seen)
		}
	}
	if len(seen) != 10 {
		t.Fatalf("shards sent %d distinct requests, want 10", len(seen))
	}
}

func TestShardNoOpAndDigest(t *testing.T) {
	st := Stage{Name: "s", Arrival: "poisson", Rate: 10, Duration: time.Second}
	c := openConfig(t, st, 1)
	for _, s := range []Shard{{}, {Index: 0, Count: 1}} {
		sst, got := s.apply(st, c)
		if sst != st || got.Pacer != c.Pacer || got.Requests != c.Requests {
			t.Fatalf("%+v changed the stage", s)
		}
	}
	_, got := Shard{Index: 1, Count: 2}.apply(st, c)
	if got.Source.Digest() != indexSource.Digest() {
		t.Fatal("a shard's workload must keep the digest: shards share a fingerprint")
	}
	r, _ := got.Source.Request(5)
	if r.Prompt != "11" {
		t.Fatalf("shard 1/2 request 5 is global %s, want 11", r.Prompt)
	}
}

func TestShardPacerRestart(t *testing.T) {
	st := Stage{Arrival: "gamma", Rate: 100, Burstiness: 2}
	c := openConfig(t, st, 3)
	p := &shardPacer{inner: c.Pacer, index: 2, count: 5}
	a := []time.Duration{p.Pace(0, 0), p.Pace(1, 0), p.Pace(1, 0), p.Pace(2, 0)}
	if a[1] != a[2] {
		t.Fatalf("asking twice for the same request gave %v and %v", a[1], a[2])
	}
	if again := p.Pace(0, 0); again != a[0] {
		t.Fatalf("restarted walk gave %v, want %v", again, a[0])
	}
	if again := p.Pace(2, 0); again != a[3] {
		t.Fatalf("after restart request 2 is at %v, want %v", again, a[3])
	}
}

func TestShardCheck(t *testing.T) {
	tests := []struct {
		shard Shard
		st    Stage
		ok    bool
	}{
		{Shard{0, 0}, Stage{Concurrency: 1}, true},
		{Shard{1, 4}, Stage{Concurrency: 4}, true},
		{Shard{1, 4}, Stage{Concurrency: 3}, false},
		{Shard{0, 4}, Stage{Rate: 1, Requests: 3}, false},
		{Shard{0, 4}, Stage{Rate: 1, Requests: 4}, true},
		{Shard{4, 4}, Stage{Rate: 1, Duration: time.Second}, false},
		{Shard{-1, 4}, Stage{Rate: 1, Duration: time.Second}, false},
	}
	for _, tt := range tests {
		if err := tt.shard.Check(tt.st); (err == nil) != tt.ok {
			t.Errorf("%+v.Check(%+v) = %v, want ok=%v", tt.shard, tt.st, err, tt.ok)
		}
	}
}

func TestResidues(t *testing.T) {
	for lo := uint64(0); lo < 12; lo++ {
		for hi := uint64(0); hi < 30; hi++ {
			for n := uint64(1); n < 6; n++ {
				for i := uint64(0); i < n; i++ {
					var want uint64
					for g := lo; g < hi; g++ {
						if g%n == i {
							want++
						}
					}
					if got := residues(lo, hi, i, n); got != want {
						t.Fatalf("residues(%d,%d,%d,%d) = %d, want %d", lo, hi, i, n, got, want)
					}
				}
			}
		}
	}
}

func TestParseShard(t *testing.T) {
	tests := []struct {
		in   string
		want Shard
		ok   bool
	}{
		{"0/1", Shard{0, 1}, true},
		{"3/4", Shard{3, 4}, true},
		{" 2/10 ", Shard{2, 10}, true},
		{"4/4", Shard{}, false},
		{"-1/4", Shard{}, false},
		{"1/0", Shard{}, false},
		{"1", Shard{}, false},
		{"a/b", Shard{}, false},
		{"1/2/3", Shard{}, false},
	}
	for _, tt := range tests {
		got, err := ParseShard(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseShard(%q) = %+v, %v; want %+v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"0/1", "3/4", "x", "9/3", "-0/5", "1/-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sh, err := ParseShard(s)
		if err != nil {
			return
		}
		if sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count {
			t.Fatalf("ParseShard(%q) = %+v: out of range", s, sh)
		}
	})
}

// BenchmarkShardPacer is the cost of one shard request's offset: Count
// steps of the inner pacer.
func BenchmarkShardPacer(b *testing.B) {
	for _, n := range []uint64{1, 8, 64} {
		b.Run(fmt.Sprintf("poisson/shards=%d", n), func(b *testing.B) {
			p := &shardPacer{inner: schedulePoisson(), index: n - 1, count: n}
			var prev time.Duration
			for i := range b.N {
				prev = p.Pace(uint64(i), prev)
			}
		})
	}
}

func schedulePoisson() schedule.Pacer {
	pc, _ := stagePacer(Stage{Arrival: "poisson", Rate: 1000}, 1, nil)
	return pc
}

// TestShardRecordsCarryTheRunIndex checks a shard's records are numbered
// by the run's request index, so records of all shards join without
// clashes.
func TestShardRecordsCarryTheRunIndex(t *testing.T) {
	st := Stage{Name: "s", Arrival: "constant", Rate: 1000, Requests: 30}
	var seqs []uint64
	var mu sync.Mutex
	for i := 0; i < 3; i++ {
		_, ecfg := Shard{Index: i, Count: 3}.apply(st, engine.Config{Pacer: schedule.Constant{Rate: 1000}, Requests: 30,
			Source: workload.Synthetic{Input: workload.Lengths{Mean: 4, Min: 1}, Seed: 1},
			Client: engine.ClientFunc(func(_ context.Context, _ *workload.Request, rec *record.Record) { rec.End = time.Now() }),
			Sink:   sinkFunc(func(r *record.Record) { mu.Lock(); seqs = append(seqs, r.Seq); mu.Unlock() })})
		if _, err := engine.Run(context.Background(), ecfg); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(seqs)
	for i, s := range seqs {
		if s != uint64(i) {
			t.Fatalf("record numbers %v, want 0..29 once each", seqs)
		}
	}
}

type sinkFunc func(*record.Record)

func (f sinkFunc) Sent(time.Time, time.Time, bool) {}
func (f sinkFunc) Record(r *record.Record)         { f(r) }
