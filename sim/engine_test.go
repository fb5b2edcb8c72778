package sim

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// vreq is a request of a virtual-time run.
type vreq struct {
	at      time.Duration
	prompt  int
	target  int
	keys    []uint64
	adapter string
}

// vrun is the outcome of a virtual-time run of the engine core.
type vrun struct {
	seqs        []*seq
	tokenTimes  [][]time.Duration // per request, the time of each output token
	end         time.Duration     // last finish
	steps       int
	preemptions int
	queries     int
	hits        int
	loraLoads   int
	stepDurs    []time.Duration
	core        *engineCore
}

// runVirtual runs the engine core on reqs in virtual time until every
// request has finished (or maxSteps).
func runVirtual(t testing.TB, cfg EngineConfig, seed int64, reqs []vreq) *vrun {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	core := newEngineCore(cfg, seed)
	r := &vrun{core: core, tokenTimes: make([][]time.Duration, len(reqs))}
	index := make(map[*seq]int, len(reqs))
	for i, q := range reqs {
		s := &seq{id: uint64(i), arrival: q.at, prompt: q.prompt, target: q.target, keys: q.keys, adapter: q.adapter}
		r.seqs = append(r.seqs, s)
		index[s] = i
		core.add(s)
	}
	var now time.Duration
	finished := 0
	const maxSteps = 2_000_000
	for finished < len(reqs) {
		if !core.hasWork(now) {
			next, ok := core.nextArrival()
			if !ok {
				t.Fatalf("engine idle with %d of %d requests unfinished", len(reqs)-finished, len(reqs))
			}
			now = next
			continue
		}
		res := core.step(now)
		now += res.dur
		r.steps++
		r.stepDurs = append(r.stepDurs, res.dur)
		r.preemptions += res.preemptions
		r.queries += res.prefixQueries
		r.hits += res.prefixHits
		r.loraLoads += res.loraLoads
		for _, q := range res.emitted {
			i := index[q]
			r.tokenTimes[i] = append(r.tokenTimes[i], now)
		}
		finished += len(res.finished)
		if r.steps > maxSteps {
			t.Fatalf("no progress after %d steps", maxSteps)
		}
	}
	r.end = now
	return r
}

// ttfts returns each request's TTFT.
func (r *vrun) ttfts() []time.Duration {
	out := make([]time.Duration, len(r.seqs))
	for i, q := range r.seqs {
		out[i] = q.firstToken - q.arrival
	}
	return out
}

// tpots returns each request's TPOT (docs/design.md §3).
func (r *vrun) tpots() []time.Duration {
	var out []time.Duration
	for _, tt := range r.tokenTimes {
		if len(tt) >= 2 {
			out = append(out, (tt[len(tt)-1]-tt[0])/time.Duration(len(tt)-1))
		}
	}
	return out
}

// poisson returns n arrival times at rate per second.
func poisson(rng *rand.Rand, n int, rate float64) []time.Duration {
	out := make([]time.Duration, n)
	var t float64
	for i := range out {
		t += rng.ExpFloat64() / rate
		out[i] = time.Duration(t * float64(time.Second))
	}
	return out
}

// keysOf returns the prefix-cache keys of a text prompt.
func keysOf(text string, blockSize int) (int, []uint64) {
	p := newPromptScanner(blockSize)
	p.feed(text)
	return p.tokens, p.keys
}

// wordsText returns n generated words.
func wordsText(v *vocab, seed uint64, n int) string {
	return string(v.appendText(nil, seed, n))
}

func mustPreset(t testing.TB, name string) EngineConfig {
	t.Helper()
	c, err := Preset(name)
	if err != nil {
		t.Fatal(err)
	}
	return *c.withDefaults().Engine
}

// TestEngineRateSweep drives the small-gpu preset with Poisson load at rising
// rates and checks what real engines show: output throughput follows the
// offered load and then plateaus; past the plateau requests queue, so TTFT
// climbs by orders of magnitude while TPOT, bounded by the batch limit,
// levels off.
func TestEngineRateSweep(t *testing.T) {
	cfg := mustPreset(t, "small-gpu")
	const n, prompt, out = 300, 512, 128
	type point struct {
		rate                 float64
		thr                  float64 // output tokens/s
		ttft50, ttft90, tpot time.Duration
		preempt              int
	}
	var pts []point
	for _, rate := range []float64{0.5, 1, 2, 4, 8, 16} {
		rng := rand.New(rand.NewPCG(7, uint64(rate*100)))
		var reqs []vreq
		for _, at := range poisson(rng, n, rate) {
			reqs = append(reqs, vreq{at: at, prompt: prompt, target: out})
		}
		r := runVirtual(t, cfg, 1, reqs)
		thr := float64(n*out) / (r.end - reqs[0].at).Seconds()
		tt := r.ttfts()
		pts = append(pts, point{rate, thr, median(tt), quantile(tt, 0.9), median(r.tpots()), r.preemptions})
	}
	t.Logf("%6s %10s %10s %10s %10s %8s", "req/s", "tok/s", "TTFT p50", "TTFT p90", "TPOT p50", "preempt")
	for _, p := range pts {
		t.Logf("%6.1f %10.0f %10v %10v %10v %8d", p.rate, p.thr, p.ttft50.Round(time.Millisecond), p.ttft90.Round(time.Millisecond), p.tpot.Round(100*time.Microsecond), p.preempt)
	}
	first, last, prev := pts[0], pts[len(pts)-1], pts[len(pts)-2]
	// Under capacity, throughput follows the offered load.
	if want := first.rate * out; first.thr < 0.85*want || first.thr > 1.15*want {
		t.Errorf("at %.1f req/s throughput %.0f tok/s, want ≈ %.0f", first.rate, first.thr, want)
	}
	// Plateau: doubling the rate at the top gains under 10 %, and the top
	// rate is far above what is served.
	if last.thr > 1.1*prev.thr {
		t.Errorf("no plateau: %.0f tok/s at %.0f req/s vs %.0f at %.0f", last.thr, last.rate, prev.thr, prev.rate)
	}
	if last.thr > 0.6*last.rate*out {
		t.Errorf("top rate served %.0f of %.0f offered tok/s: not saturated", last.thr, last.rate*out)
	}
	// Throughput never falls as load rises (beyond noise).
	for i := 1; i < len(pts); i++ {
		if pts[i].thr < 0.9*pts[i-1].thr {
			t.Errorf("throughput fell from %.0f to %.0f tok/s", pts[i-1].thr, pts[i].thr)
		}
	}
	// Queueing: TTFT explodes past saturation, TPOT levels off.
	if last.ttft50 < 20*first.ttft50 {
		t.Errorf("TTFT p50 %v at the top vs %v at the bottom: want ≥ 20x", last.ttft50, first.ttft50)
	}
	if last.tpot > 2*prev.tpot || last.tpot > 10*first.tpot {
		t.Errorf("TPOT kept growing past saturation: %v, %v, %v", first.tpot, prev.tpot, last.tpot)
	}
	if last.tpot < first.tpot {
		t.Errorf("TPOT %v at the top below %v at the bottom: batching costs nothing?", last.tpot, first.tpot)
	}
}

// TestEnginePrefixCaching checks that requests sharing a long prefix prefill
// only their own part when prefix caching is on.
func TestEnginePrefixCaching(t *testing.T) {
	v := newVocab()
	system := wordsText(v, 1, 1024)
	base := mustPreset(t, "small-gpu")
	var ttfts [2][]time.Duration
	for i, caching := range []bool{false, true} {
		cfg := base
		cfg.PrefixCaching = caching
		var reqs []vreq
		for k := range 20 {
			bs := 0
			if caching {
				bs = cfg.BlockSize
			}
			n, keys := keysOf(system+wordsText(v, uint64(100+k), 32), bs)
			reqs = append(reqs, vreq{at: time.Duration(k) * 2 * time.Second, prompt: n, target: 16, keys: keys})
		}
		r := runVirtual(t, cfg, 1, reqs)
		ttfts[i] = r.ttfts()[1:] // the first request fills the cache
		if caching {
			if r.hits < 19*1024*9/10 || r.queries < r.hits {
				t.Errorf("prefix cache: %d hits of %d queried tokens, want ≥ %d hits", r.hits, r.queries, 19*1024*9/10)
			}
		} else if r.hits != 0 {
			t.Errorf("prefix caching off but %d hits", r.hits)
		}
	}
	off, on := median(ttfts[0]), median(ttfts[1])
	t.Logf("median TTFT with a shared 1,024-token prefix: %v without prefix caching, %v with", off, on)
	if on > off/3 {
		t.Errorf("prefix caching should cut TTFT well below a third: %v vs %v", on, off)
	}
}

// TestEnginePreemption checks that an exhausted KV cache preempts (and later
// recomputes) sequences, every request still finishes with all its tokens,
// and no block leaks.
func TestEnginePreemption(t *testing.T) {
	cfg := EngineConfig{
		MaxNumSeqs: 32, MaxBatchedTokens: 2048, KVCacheTokens: 4096, BlockSize: 16,
		ChunkedPrefill: true, PrefixCaching: true,
		StepBase: time.Millisecond, DecodePerSeq: 20 * time.Microsecond, PrefillPerToken: 5 * time.Microsecond,
	}
	v := newVocab()
	var reqs []vreq
	for k := range 24 {
		n, keys := keysOf(wordsText(v, uint64(k), 200), cfg.BlockSize)
		reqs = append(reqs, vreq{at: time.Duration(k) * time.Millisecond, prompt: n, target: 300, keys: keys})
	}
	r := runVirtual(t, cfg, 1, reqs)
	if r.preemptions == 0 {
		t.Fatalf("24 requests of 500 tokens in a 4,096-token cache: no preemption")
	}
	for i, q := range r.seqs {
		if len(r.tokenTimes[i]) != 300 || q.generated != 300 {
			t.Errorf("request %d: %d tokens, want 300", i, len(r.tokenTimes[i]))
		}
	}
	b := r.core.blocks
	if b.free() != b.total || b.usage() != 0 {
		t.Errorf("blocks leaked: %d free of %d", b.free(), b.total)
	}
	t.Logf("%d preemptions over %d steps", r.preemptions, r.steps)
}

// TestEngineChunkedPrefill checks that without chunked prefill a long prompt
// stalls the decoding sequences for its whole prefill, and with it the stall
// is bounded by the token budget.
func TestEngineChunkedPrefill(t *testing.T) {
	maxGap := func(chunked bool) time.Duration {
		cfg := EngineConfig{
			MaxNumSeqs: 16, MaxBatchedTokens: 512, KVCacheTokens: 65536, BlockSize: 16, ChunkedPrefill: chunked,
			StepBase: 5 * time.Millisecond, DecodePerSeq: 100 * time.Microsecond, PrefillPerToken: 50 * time.Microsecond,
		}
		reqs := []vreq{
			{at: 0, prompt: 100, target: 200},
			{at: 100 * time.Millisecond, prompt: 8000, target: 4},
		}
		r := runVirtual(t, cfg, 1, reqs)
		var g time.Duration
		tt := r.tokenTimes[0]
		for i := 1; i < len(tt); i++ {
			g = max(g, tt[i]-tt[i-1])
		}
		return g
	}
	off, on := maxGap(false), maxGap(true)
	t.Logf("longest inter-token gap of a decoding stream while an 8,000-token prompt is prefilled: %v without chunked prefill, %v with", off, on)
	if off < 8000*50*time.Microsecond {
		t.Errorf("without chunked prefill the gap %v should cover the whole prefill (%v)", off, 8000*50*time.Microsecond)
	}
	if on > 512*50*time.Microsecond+10*time.Millisecond {
		t.Errorf("with chunked prefill the gap %v should stay under one budget of prefill", on)
	}
}

// TestEngineLoRA checks adapter loading: a cold adapter costs LoadTime in
// the step that loads it, a resident one does not, and with one slot two
// alternating adapters reload every time.
func TestEngineLoRA(t *testing.T) {
	cfg := mustPreset(t, "a100-llama8b")
	cfg.LoRA = LoRAConfig{MaxLoRAs: 1, LoadTime: 50 * time.Millisecond}
	run := func(adapters ...string) *vrun {
		var reqs []vreq
		for i, a := range adapters {
			reqs = append(reqs, vreq{at: time.Duration(i) * time.Second, prompt: 64, target: 4, adapter: a})
		}
		return runVirtual(t, cfg, 1, reqs)
	}
	same := run("a", "a", "a", "a")
	alt := run("a", "b", "a", "b")
	if same.loraLoads != 1 || alt.loraLoads != 4 {
		t.Errorf("adapter loads: %d for a,a,a,a (want 1), %d for a,b,a,b (want 4)", same.loraLoads, alt.loraLoads)
	}
	warm, cold := same.ttfts()[3], alt.ttfts()[3]
	if d := cold - warm; d < 45*time.Millisecond || d > 55*time.Millisecond {
		t.Errorf("cold adapter TTFT %v vs warm %v: want LoadTime (50ms) more", cold, warm)
	}
	// Two adapters, one slot, both busy: the second waits for the first.
	busy := runVirtual(t, cfg, 1, []vreq{{at: 0, prompt: 64, target: 100, adapter: "a"}, {at: time.Millisecond, prompt: 64, target: 4, adapter: "b"}})
	if busy.seqs[1].firstToken < busy.seqs[0].finishedAt {
		t.Errorf("adapter b ran (first token %v) while a held the only slot (until %v)", busy.seqs[1].firstToken, busy.seqs[0].finishedAt)
	}
}

// TestEngineMoE checks that expert routing makes step time vary, seeded:
// the same seed gives the same steps, another seed different ones.
func TestEngineMoE(t *testing.T) {
	cfg := mustPreset(t, "moe")
	cfg.StepJitter = 0 // isolate the routing term
	var reqs []vreq
	for i := range 16 {
		reqs = append(reqs, vreq{at: time.Duration(i) * 5 * time.Millisecond, prompt: 32, target: 64})
	}
	a, b, c := runVirtual(t, cfg, 1, reqs), runVirtual(t, cfg, 1, reqs), runVirtual(t, cfg, 2, reqs)
	if !slices.Equal(a.stepDurs, b.stepDurs) {
		t.Error("same seed, different step times")
	}
	if slices.Equal(a.stepDurs, c.stepDurs) {
		t.Error("different seeds, same step times")
	}
	// Steps with the same batch differ only through routing.
	distinct := map[time.Duration]bool{}
	for _, d := range a.stepDurs[len(a.stepDurs)/4 : len(a.stepDurs)/2] {
		distinct[d] = true
	}
	if len(distinct) < 3 {
		t.Errorf("MoE step times barely vary: %d distinct values", len(distinct))
	}
	dense := cfg
	dense.MoE = nil
	d := runVirtual(t, dense, 1, reqs)
	if median(a.stepDurs) <= median(d.stepDurs) {
		t.Errorf("MoE steps (%v) should cost more than the dense part alone (%v)", median(a.stepDurs), median(d.stepDurs))
	}
}

// TestPresets checks that every preset is valid and documented: in the
// project README, a page of docs/ or the simulator's README.
func TestPresets(t *testing.T) {
	readme := readFile(t, "../README.md") + readFile(t, "README.md")
	pages, _ := filepath.Glob("../docs/*.md")
	for _, p := range pages {
		readme += readFile(t, p)
	}
	for _, name := range Presets() {
		c, err := Preset(name)
		if err != nil {
			t.Fatalf("Preset(%q): %v", name, err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
		if c.Engine == nil {
			t.Errorf("preset %s is not engine mode", name)
		}
		if !strings.Contains(readme, "`"+name+"`") {
			t.Errorf("preset %s is not documented in README.md, docs/*.md or sim/README.md", name)
		}
	}
	if _, err := Preset("nope"); err == nil {
		t.Error("Preset(nope) succeeded")
	}
}
