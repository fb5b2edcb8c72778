package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// seq is one request inside the engine model.
type seq struct {
	id      uint64
	arrival time.Duration // engine time at which it joins the waiting queue
	prompt  int           // prompt tokens
	target  int           // output tokens to generate; 0: prefill only (embeddings)
	keys    []uint64      // prefix-cache keys of its full prompt blocks
	adapter string        // LoRA adapter, "" for the base model

	computed  int // tokens whose KV is computed (of prompt + generated)
	generated int // output tokens produced so far
	shared    int // leading blocks held as prefix-cache references
	private   int // further blocks held

	firstScheduled time.Duration // -1 until first scheduled
	firstToken     time.Duration // -1 until the first output token
	finishedAt     time.Duration
	done           bool
	preemptions    int
	cachedTokens   int // prompt tokens served from the prefix cache (last admission)

	sink *stream // the HTTP side; nil when the core is driven by a test
}

// numTokens is the number of tokens whose KV the sequence needs now.
func (q *seq) numTokens() int { return q.prompt + q.generated }

func (q *seq) aborted() bool { return q.sink != nil && q.sink.cancelled.Load() }

// scheduled is one sequence's share of a step.
type scheduled struct {
	q *seq
	n int // tokens computed for it in the step
}

// stepResult is what one engine step did. Its slices are reused by the next
// step.
type stepResult struct {
	start, dur    time.Duration
	batch         []scheduled
	emitted       []*seq // got a new output token at the end of the step
	finished      []*seq // finished at the end of the step (emitted or prefill-only)
	prefillTokens int
	decodeSeqs    int
	preemptions   int
	prefixQueries int
	prefixHits    int
	loraLoads     int
}

// engineCore is the continuous-batching engine as a pure step function of
// virtual time: add sequences, call step repeatedly; nothing in it reads a
// clock or blocks. It is not safe for concurrent use.
type engineCore struct {
	cfg    EngineConfig
	rng    *rand.Rand
	blocks *blockManager
	moe    *moeModel

	pending []*seq // arrival in the future, a min-heap on arrival
	waiting []*seq // FIFO; preempted sequences go back to the front
	running []*seq // in admission order; preemption takes the last

	loraResident []string       // resident adapters, least recently used first
	loraRunning  map[string]int // running sequences per adapter

	res      stepResult
	waitBuf  []*seq
	adapters []string

	// Totals since the start.
	totalPreemptions int
	totalSteps       int
}

func newEngineCore(cfg EngineConfig, seed int64) *engineCore {
	e := &engineCore{
		cfg:         cfg,
		rng:         rand.New(rand.NewPCG(uint64(seed), 0x656e67696e65)), // "engine"
		blocks:      newBlockManager(cfg.BlockSize, cfg.KVCacheTokens),
		loraRunning: make(map[string]int),
	}
	if cfg.MoE != nil {
		e.moe = newMoEModel(*cfg.MoE)
	}
	return e
}

// capacityTokens is the most tokens one sequence may need (the whole cache).
func (e *engineCore) capacityTokens() int { return e.blocks.total * e.blocks.blockSize }

// add enqueues q; it joins the waiting queue at q.arrival.
func (e *engineCore) add(q *seq) {
	q.firstScheduled, q.firstToken = -1, -1
	e.pending = append(e.pending, q)
	heapUp(e.pending, len(e.pending)-1)
}

// idle reports whether no sequence is waiting or running (future arrivals
// may be pending).
func (e *engineCore) idle() bool { return len(e.running) == 0 && len(e.waiting) == 0 }

// nextArrival returns the earliest pending arrival.
func (e *engineCore) nextArrival() (time.Duration, bool) {
	if len(e.pending) == 0 {
		return 0, false
	}
	return e.pending[0].arrival, true
}

// hasWork moves arrivals up to now into the waiting queue and reports
// whether a step at now has anything to do.
func (e *engineCore) hasWork(now time.Duration) bool {
	for len(e.pending) > 0 && e.pending[0].arrival <= now {
		e.waiting = append(e.waiting, heapPop(&e.pending))
	}
	return !e.idle()
}

// counts returns the numbers of running and waiting sequences.
func (e *engineCore) counts() (running, waiting int) { return len(e.running), len(e.waiting) }

// step runs one engine step starting at now: it schedules a batch, works out
// how long the step takes, and applies its effects (tokens, finished and
// preempted sequences) as of the end of the step, now + result.dur.
func (e *engineCore) step(now time.Duration) *stepResult {
	e.hasWork(now)
	r := &e.res
	*r = stepResult{start: now, batch: r.batch[:0], emitted: r.emitted[:0], finished: r.finished[:0]}
	e.dropAborted()

	cfg := &e.cfg
	budget := cfg.MaxBatchedTokens
	// Without chunked prefill a step either admits whole prompts (and the
	// running sequences wait) or decodes, as vLLM's V0 scheduler did.
	prefillStep := !cfg.ChunkedPrefill && e.canAdmitHead()

	if !prefillStep {
		for i := 0; i < len(e.running) && budget > 0; i++ {
			q := e.running[i]
			n := min(q.numTokens()-q.computed, budget)
			if n <= 0 {
				continue
			}
			for q != nil && !e.blocks.grow(q, q.computed+n) {
				victim := e.running[len(e.running)-1]
				e.running = e.running[:len(e.running)-1]
				e.preempt(victim)
				r.preemptions++
				if victim == q {
					q = nil
				}
			}
			if q == nil {
				break
			}
			r.batch = append(r.batch, scheduled{q, n})
			budget -= n
		}
	}
	if r.preemptions == 0 {
		budget = e.admit(now, budget, len(r.batch) == 0)
	}

	// Cost of the step.
	var ctxTokens int
	e.adapters = e.adapters[:0]
	for _, s := range r.batch {
		if s.q.generated > 0 && s.n == 1 && s.q.computed == s.q.numTokens()-1 {
			r.decodeSeqs++
			ctxTokens += s.q.computed + 1
		} else {
			r.prefillTokens += s.n
		}
		if s.q.adapter != "" && !slices.Contains(e.adapters, s.q.adapter) {
			e.adapters = append(e.adapters, s.q.adapter)
		}
	}
	dur := cfg.StepBase +
		time.Duration(r.decodeSeqs)*cfg.DecodePerSeq +
		time.Duration(int64(cfg.DecodePerKTokens)*int64(ctxTokens)/1000) +
		time.Duration(r.prefillTokens)*cfg.PrefillPerToken +
		time.Duration(len(e.adapters))*cfg.LoRA.PerAdapterStep +
		time.Duration(r.loraLoads)*cfg.LoRA.LoadTime
	if e.moe != nil {
		dur += e.moe.stepCost(r.decodeSeqs+r.prefillTokens, e.rng)
	}
	if cfg.StepJitter > 0 {
		dur = time.Duration(float64(dur) * math.Exp(cfg.StepJitter*e.rng.NormFloat64()))
	}
	dur = max(dur, time.Microsecond)
	r.dur = dur
	end := now + dur

	// Effects, as of the end of the step.
	bs := e.blocks.blockSize
	anyFinished := false
	for _, s := range r.batch {
		q := s.q
		q.computed += s.n
		for q.shared < len(q.keys) && (q.shared+1)*bs <= q.computed && q.private > 0 {
			e.blocks.register(q)
		}
		if q.computed < q.numTokens() {
			continue // a prefill chunk; more to come
		}
		if q.target == 0 {
			e.finish(q, end)
			anyFinished = true
			continue
		}
		q.generated++
		if q.firstToken < 0 {
			q.firstToken = end
		}
		r.emitted = append(r.emitted, q)
		if q.generated >= q.target {
			e.finish(q, end)
			anyFinished = true
		}
	}
	if anyFinished {
		e.running = slices.DeleteFunc(e.running, func(q *seq) bool { return q.done })
	}
	e.totalPreemptions += r.preemptions
	e.totalSteps++
	return r
}

// canAdmitHead reports whether the first waiting sequence could be admitted
// now (used to choose a prefill step without chunked prefill).
func (e *engineCore) canAdmitHead() bool {
	if len(e.waiting) == 0 || len(e.running) >= e.cfg.MaxNumSeqs {
		return false
	}
	for _, q := range e.waiting {
		if !e.loraAdmissible(q.adapter) {
			continue
		}
		return e.blocks.free() >= e.blocks.blocksFor(q.numTokens())
	}
	return false
}

// admit moves waiting sequences into the running set while the budget, the
// sequence limit, the KV cache and the LoRA slots allow, and schedules their
// first (or only) prefill chunk.
func (e *engineCore) admit(now time.Duration, budget int, batchEmpty bool) int {
	r := &e.res
	cfg := &e.cfg
	bs := e.blocks.blockSize
	keep := e.waitBuf[:0]
	i := 0
	for ; i < len(e.waiting); i++ {
		q := e.waiting[i]
		if len(e.running) >= cfg.MaxNumSeqs || budget <= 0 {
			break
		}
		if !e.loraAdmissible(q.adapter) {
			keep = append(keep, q) // skipped, not blocking those behind it
			continue
		}
		hit := 0
		if cfg.PrefixCaching && len(q.keys) > 0 {
			hit = e.blocks.match(q.keys, (q.numTokens()-1)/bs)
		}
		want := q.numTokens() - hit*bs
		n := min(want, budget)
		if !cfg.ChunkedPrefill && n < want {
			if !batchEmpty {
				break
			}
			n = want // a prompt larger than the budget goes alone
		}
		e.blocks.acquire(q.keys[:hit])
		q.shared = hit
		q.computed = hit * bs
		if !e.blocks.grow(q, q.computed+n) {
			e.blocks.releaseAll(q)
			q.computed = 0
			break
		}
		if cfg.PrefixCaching {
			r.prefixQueries += q.numTokens()
			r.prefixHits += hit * bs
		}
		q.cachedTokens = hit * bs
		if q.adapter != "" {
			e.loraUse(q.adapter)
		}
		if q.firstScheduled < 0 {
			q.firstScheduled = now
		}
		e.running = append(e.running, q)
		r.batch = append(r.batch, scheduled{q, n})
		budget -= n
		batchEmpty = false
	}
	keep = append(keep, e.waiting[i:]...)
	e.waiting, e.waitBuf = keep, e.waiting[:0]
	return budget
}

// preempt frees q's KV cache and puts it back at the front of the waiting
// queue; it will recompute its prompt and the tokens generated so far.
func (e *engineCore) preempt(q *seq) {
	e.blocks.releaseAll(q)
	q.computed = 0
	q.preemptions++
	if q.adapter != "" {
		e.loraRunning[q.adapter]--
	}
	e.waiting = slices.Insert(e.waiting, 0, q)
}

// finish releases a finished sequence's resources (it is removed from the
// running list by the caller).
func (e *engineCore) finish(q *seq, at time.Duration) {
	q.finishedAt = at
	q.done = true
	e.blocks.releaseAll(q)
	if q.adapter != "" {
		e.loraRunning[q.adapter]--
	}
	e.res.finished = append(e.res.finished, q)
}

// dropAborted removes sequences whose client went away.
func (e *engineCore) dropAborted() {
	e.running = slices.DeleteFunc(e.running, func(q *seq) bool {
		if !q.aborted() {
			return false
		}
		e.blocks.releaseAll(q)
		if q.adapter != "" {
			e.loraRunning[q.adapter]--
		}
		return true
	})
	e.waiting = slices.DeleteFunc(e.waiting, (*seq).aborted)
}

// loraAdmissible reports whether a sequence of the adapter can run now: the
// adapter is resident, a slot is free, or a resident adapter has no running
// sequences and can be evicted.
func (e *engineCore) loraAdmissible(adapter string) bool {
	if adapter == "" || slices.Contains(e.loraResident, adapter) || len(e.loraResident) < e.cfg.LoRA.MaxLoRAs {
		return true
	}
	for _, a := range e.loraResident {
		if e.loraRunning[a] == 0 {
			return true
		}
	}
	return false
}

// loraUse marks the adapter used by one more running sequence, loading it
// (and evicting the least recently used idle adapter) if it is cold.
func (e *engineCore) loraUse(adapter string) {
	if i := slices.Index(e.loraResident, adapter); i >= 0 {
		e.loraResident = append(slices.Delete(e.loraResident, i, i+1), adapter)
	} else {
		if len(e.loraResident) >= e.cfg.LoRA.MaxLoRAs {
			for j, a := range e.loraResident {
				if e.loraRunning[a] == 0 {
					e.loraResident = slices.Delete(e.loraResident, j, j+1)
					delete(e.loraRunning, a)
					break
				}
			}
		}
		e.loraResident = append(e.loraResident, adapter)
		e.res.loraLoads++
	}
	e.loraRunning[adapter]++
}

// heapUp and heapPop keep a min-heap of sequences on arrival.
func heapUp(h []*seq, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p].arrival <= h[i].arrival {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func heapPop(hp *[]*seq) *seq {
	h := *hp
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = nil
	h = h[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(h) && h[l].arrival < h[m].arrival {
			m = l
		}
		if l+1 < len(h) && h[l+1].arrival < h[m].arrival {
			m = l + 1
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*hp = h
	return top
}
