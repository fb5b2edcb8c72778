package runner

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spate-dev/spate/internal/engine"
	"github.com/spate-dev/spate/internal/schedule"
	"github.com/spate-dev/spate/internal/workload"
)

// Shard is one part of a load split over Count processes (issue 12): shard
// Index (0 ≤ Index < Count) sends global requests Index, Index+Count,
// Index+2·Count, … of the schedule and workload one process would have
// used, so the union of the Count shards is that one process's load.
type Shard struct {
	Index, Count int
}

// Validate reports a shard whose index is out of range.
func (s Shard) Validate() error {
	if s.Count < 0 || (s.Count > 0 && (s.Index < 0 || s.Index >= s.Count)) {
		return fmt.Errorf("shard %d/%d: the index must be at least 0 and below the shard count", s.Index, s.Count)
	}
	return nil
}

// Check reports a stage whose load cannot be split over s.Count shards so
// that every shard sends something: a closed-loop concurrency or a request
// count smaller than the shard count.
func (s Shard) Check(st Stage) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Count <= 1 {
		return nil
	}
	if st.Concurrency > 0 && st.Concurrency < s.Count {
		return fmt.Errorf("stage %s: a concurrency of %d cannot be split over %d shards: use at most %d shards or raise the concurrency", st.Name, st.Concurrency, s.Count, st.Concurrency)
	}
	if st.Requests > 0 && st.Requests < s.Count {
		return fmt.Errorf("stage %s: %d requests cannot be split over %d shards: use at most %d shards or send more requests", st.Name, st.Requests, s.Count, st.Requests)
	}
	return nil
}

// share is shard i's part of total when total is dealt out one at a time
// over n shards: ⌊total/n⌋, plus one for the first total mod n shards.
func share(total, i, n int) int {
	s := total / n
	if i < total%n {
		s++
	}
	return s
}

// residues counts the integers g in [lo, hi) with g mod n == i.
func residues(lo, hi, i, n uint64) uint64 {
	below := func(x uint64) uint64 { // #{g < x : g ≡ i}
		if x <= i {
			return 0
		}
		return (x - i + n - 1) / n
	}
	if hi <= lo {
		return 0
	}
	return below(hi) - below(lo)
}

// apply narrows a stage's load to the shard. With Count ≤ 1 it changes
// nothing.
//
// Open loop: the shard's request n is global request n·Count+Index, sent at
// that request's offset in the single-process schedule and with its
// workload request; warm-up and duration are those of the whole run, and a
// request count is split so that the shards together send the requests the
// single process would have measured. Closed loop: the concurrency and the
// request count are dealt out over the shards and each shard takes every
// Count-th workload request.
//
// The stage's Rate, RampFrom, Concurrency, MaxConcurrency and Requests
// become the shard's part, so its scenario reports its own target; a merge
// sums them back.
func (s Shard) apply(st Stage, ecfg engine.Config) (Stage, engine.Config) {
	if s.Count <= 1 {
		return st, ecfg
	}
	n, i := uint64(s.Count), uint64(s.Index)
	ecfg.SeqStride, ecfg.SeqOffset = n, i // records carry the run's request index
	if ecfg.Source != nil {
		ecfg.Source = shardSource(ecfg.Source, i, n)
	}
	if ecfg.Pacer != nil {
		if ecfg.Requests > 0 {
			w := warmCount(ecfg.Pacer, ecfg.Warmup)
			ecfg.Requests = int(residues(w, w+uint64(ecfg.Requests), i, n))
		}
		ecfg.Pacer = &shardPacer{inner: ecfg.Pacer, index: i, count: n}
		if ecfg.MaxConcurrency > 0 {
			ecfg.MaxConcurrency = max(1, share(ecfg.MaxConcurrency, s.Index, s.Count))
		}
		st.Rate /= float64(s.Count)
		st.TokenRate /= float64(s.Count)
		st.RampFrom /= float64(s.Count)
		st.MaxConcurrency = ecfg.MaxConcurrency
	} else {
		ecfg.Concurrency = share(ecfg.Concurrency, s.Index, s.Count)
		if ecfg.Requests > 0 {
			ecfg.Requests = share(ecfg.Requests, s.Index, s.Count)
		}
		st.Concurrency = ecfg.Concurrency
	}
	if st.Requests > 0 {
		st.Requests = ecfg.Requests
		if ecfg.Requests == 0 {
			// Check rejects this; should a caller skip it, the engine must
			// refuse the stage rather than send for the whole duration
			// (a zero request count means "no limit").
			ecfg.Duration = 0
		}
	}
	return st, ecfg
}

// warmCount is the number of requests of the single-process schedule sent
// during the warm-up: their offsets are before warmup (offsets never go
// back, so they are a prefix of the schedule).
func warmCount(p schedule.Pacer, warmup time.Duration) uint64 {
	if warmup <= 0 {
		return 0
	}
	var g uint64
	var prev time.Duration
	for ; ; g++ {
		off := p.Pace(g, prev)
		if off >= warmup {
			return g
		}
		prev = off
	}
}

// shardPacer paces a shard's requests at the offsets of the global requests
// they stand for. The engine asks for offsets in order, so it walks the
// global schedule once: Count steps of the inner pacer per request of the
// shard, the whole schedule over all shards' processes. It is not safe for
// concurrent use (the engine's open loop calls it from one goroutine).
type shardPacer struct {
	inner        schedule.Pacer
	index, count uint64
	next         uint64        // next global request to compute
	last         time.Duration // offset of global request next−1
}

// Pace implements schedule.Pacer: the offset of global request
// n·count+index. A request before the last one asked restarts the walk.
func (p *shardPacer) Pace(n uint64, _ time.Duration) time.Duration {
	g := n*p.count + p.index
	if g+1 == p.next {
		return p.last
	}
	if g < p.next {
		p.next, p.last = 0, 0
	}
	for ; p.next <= g; p.next++ {
		p.last = p.inner.Pace(p.next, p.last)
	}
	return p.last
}

// shardSource returns the source whose request n is request n·count+index
// of src; the digest stays src's, so all shards share the fingerprint.
func shardSource(src workload.Source, index, count uint64) workload.Source {
	return workload.SourceFunc{
		Sha256: src.Digest(),
		F: func(n uint64) (*workload.Request, error) {
			return src.Request(n*count + index)
		},
	}
}

// ParseShard reads "I/N": shard I (from 0) of N.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want INDEX/COUNT, e.g. 0/4 for the first of four shards", s)
	}
	idx, err1 := strconv.Atoi(i)
	cnt, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil || cnt < 1 {
		return Shard{}, fmt.Errorf("shard %q: want INDEX/COUNT with whole numbers and COUNT at least 1, e.g. 0/4", s)
	}
	sh := Shard{Index: idx, Count: cnt}
	if err := sh.Validate(); err != nil {
		return Shard{}, err
	}
	return sh, nil
}
