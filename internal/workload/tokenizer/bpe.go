package tokenizer

import (
	"context"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// BPE is a Counter over a byte-level BPE vocabulary: a pre-tokenizer
// pattern splits the text into pieces, and each piece is merged pair by
// pair, lowest rank first (leftmost on ties), as tiktoken does. The count
// equals tiktoken's EncodeOrdinary length for every text (the tests check
// it against tiktoken-go), but its work grows as n log n in the text's
// length whatever the text: a long run of one character class, which
// tiktoken rescans on every merge (quadratic), is merged from a heap of
// candidate pairs.
type BPE struct {
	name    string
	ranks   map[string]int
	pattern string
	pat     *regexp2.Regexp
	pool    sync.Pool // *scratch
}

var _ Counter = (*BPE)(nil)

// newBPE returns a BPE of ranks split by pattern.
func newBPE(name, pattern string, ranks map[string]int) (*BPE, error) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: compiling the pre-tokenizer pattern: %w", name, err)
	}
	b := &BPE{name: name, ranks: ranks, pattern: pattern, pat: re}
	b.pool.New = func() any { return new(scratch) }
	return b, nil
}

// Name implements Counter.
func (b *BPE) Name() string { return b.name }

// Count implements Counter. Special tokens in text are counted as text;
// invalid UTF-8 counts as U+FFFD, as tiktoken-go reads it.
func (b *BPE) Count(text string) int {
	n, _ := b.count(text, nil)
	return n
}

// CountContext is Count that gives up when ctx ends: it then returns
// ctx's error. A count looks at ctx every few thousand steps; only the
// pre-tokenizer's match of one piece cannot stop part way (about 0.1 s
// for a 1 MB word).
func (b *BPE) CountContext(ctx context.Context, text string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n, ok := b.count(text, ctx.Done())
	if !ok {
		return n, ctx.Err()
	}
	return n, nil
}

// stopEvery is how many steps (pieces, merges) a count takes between two
// looks at its stop channel.
const stopEvery = 4096

// stopped reports whether done is closed (never, for a nil done).
func stopped(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// count counts text, giving up (false) once done is closed.
func (b *BPE) count(text string, done <-chan struct{}) (int, bool) {
	if text == "" {
		return 0, true
	}
	s := b.pool.Get().(*scratch)
	defer b.pool.Put(s)
	s.runes = appendRunes(s.runes[:0], text)
	s.done = done
	defer func() { s.done = nil }()
	n, steps := 0, 0
	m, _ := b.pat.FindRunesMatch(s.runes)
	for m != nil {
		if steps++; steps%stopEvery == 0 && stopped(done) {
			return n, false
		}
		s.piece = appendUTF8(s.piece[:0], s.runes[m.Index:m.Index+m.Length])
		k, ok := b.countPiece(s.piece, s)
		if n += k; !ok {
			return n, false
		}
		m, _ = b.pat.FindNextMatch(m)
	}
	if cap(s.runes) > 1<<16 { // do not keep a huge text's buffers
		s.runes, s.piece = nil, nil
	}
	return n, true
}

func appendRunes(dst []rune, s string) []rune {
	for _, r := range s {
		dst = append(dst, r)
	}
	return dst
}

func appendUTF8(dst []byte, rs []rune) []byte {
	for _, r := range rs {
		dst = utf8.AppendRune(dst, r)
	}
	return dst
}

// scratch is one count's working memory, pooled.
type scratch struct {
	runes []rune
	piece []byte
	start []int32 // small merge: part start offsets
	rank  []int   // small merge: rank of the pair starting at each part
	next  []int32 // heap merge: next part's start, by part start
	prev  []int32
	alive []bool
	heap  pairHeap
	done  <-chan struct{} // closed: the count gives up
}

// smallPiece is the length up to which a piece is merged by rescanning
// (fast for the short pieces of ordinary text); longer ones use the heap.
const smallPiece = 64

// countPiece returns the number of tokens piece p merges into.
// It gives up (false) once s.done is closed.
func (b *BPE) countPiece(p []byte, s *scratch) (int, bool) {
	if len(p) <= 1 {
		return len(p), true
	}
	if _, ok := b.ranks[string(p)]; ok {
		return 1, true
	}
	if len(p) <= smallPiece {
		return b.mergeScan(p, s), true
	}
	return b.mergeHeap(p, s)
}

const noRank = int(^uint(0) >> 1)

// mergeScan merges p as tiktoken does: find the lowest-ranked pair,
// merge it, repeat. Quadratic, for short pieces only.
func (b *BPE) mergeScan(p []byte, s *scratch) int {
	parts := s.start[:0]
	for i := 0; i <= len(p); i++ {
		parts = append(parts, int32(i))
	}
	rank := s.rank[:0]
	pair := func(i int) int { // rank of parts i and i+1 merged
		if i+2 >= len(parts) {
			return noRank
		}
		if r, ok := b.ranks[string(p[parts[i]:parts[i+2]])]; ok {
			return r
		}
		return noRank
	}
	for range parts {
		rank = append(rank, noRank)
	}
	for i := 0; i+2 < len(parts); i++ {
		rank[i] = pair(i)
	}
	for len(parts) > 2 {
		min, at := noRank, -1
		for i := 0; i+1 < len(parts); i++ {
			if rank[i] < min {
				min, at = rank[i], i
			}
		}
		if at < 0 {
			break
		}
		parts = append(parts[:at+1], parts[at+2:]...)
		rank = append(rank[:at+1], rank[at+2:]...)
		rank[at] = pair(at)
		if at > 0 {
			rank[at-1] = pair(at - 1)
		}
	}
	s.start, s.rank = parts, rank
	return len(parts) - 1
}

// mergeHeap merges p with the same rule as mergeScan in O(n log n): the
// parts are a linked list indexed by their start offset, and candidate
// pairs wait in a heap ordered by (rank, start); a candidate whose parts
// have changed since it was pushed is dropped when it comes up.
// It gives up (false) once s.done is closed.
func (b *BPE) mergeHeap(p []byte, s *scratch) (int, bool) {
	n := int32(len(p))
	s.next, s.prev, s.alive = grow(s.next, n+1), grow(s.prev, n+1), growBool(s.alive, n+1)
	next, prev, alive := s.next, s.prev, s.alive
	for i := int32(0); i <= n; i++ {
		next[i], prev[i], alive[i] = i+1, i-1, true
	}
	h := s.heap[:0]
	// push queues the pair of part i and the part after it, if it is a
	// token.
	push := func(i int32) {
		j := next[i]
		if j >= n {
			return
		}
		k := next[j]
		if r, ok := b.ranks[string(p[i:k])]; ok {
			h.push(pair{rank: r, i: i, k: k})
		}
	}
	for i := int32(0); i+1 < n; i++ {
		if i%stopEvery == 0 && stopped(s.done) {
			s.heap = h
			return int(n), false
		}
		push(i)
	}
	parts, steps := int(n), 0
	for len(h) > 0 {
		if steps++; steps%stopEvery == 0 && stopped(s.done) {
			s.heap = h
			return parts, false
		}
		e := h.pop()
		if !alive[e.i] || next[e.i] >= n || next[next[e.i]] != e.k {
			continue // stale: one of its parts merged since
		}
		j := next[e.i]
		alive[j] = false
		next[e.i] = e.k
		if e.k < n {
			prev[e.k] = e.i
		}
		parts--
		push(e.i)
		if pi := prev[e.i]; pi >= 0 {
			push(pi)
		}
	}
	s.heap = h
	return parts, true
}

func grow(s []int32, n int32) []int32 {
	if int32(cap(s)) < n {
		return make([]int32, n)
	}
	return s[:n]
}

func growBool(s []bool, n int32) []bool {
	if int32(cap(s)) < n {
		return make([]bool, n)
	}
	return s[:n]
}

// pair is a candidate merge: parts starting at i (and ending at k) with
// the merged token's rank.
type pair struct {
	rank int
	i, k int32
}

func (a pair) less(b pair) bool { return a.rank < b.rank || a.rank == b.rank && a.i < b.i }

// pairHeap is a binary min-heap of pairs.
type pairHeap []pair

func (h *pairHeap) push(e pair) {
	*h = append(*h, e)
	a := *h
	for c := len(a) - 1; c > 0; {
		p := (c - 1) / 2
		if !a[c].less(a[p]) {
			break
		}
		a[c], a[p] = a[p], a[c]
		c = p
	}
}

func (h *pairHeap) pop() pair {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for p := 0; ; {
		l, m := 2*p+1, p
		if l < len(a) && a[l].less(a[m]) {
			m = l
		}
		if r := l + 1; r < len(a) && a[r].less(a[m]) {
			m = r
		}
		if m == p {
			break
		}
		a[p], a[m] = a[m], a[p]
		p = m
	}
	*h = a
	return top
}
