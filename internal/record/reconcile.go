package record

import "sort"

// ReconcileChunkTokens makes the per-chunk token counts agree with the
// output token count the server reported in its usage: when the local
// tokenizer's counts of each chunk's text (ChunkTokens) do not sum to
// UsageTokens, they are redistributed so that they do, keeping their shape.
//
// The method (docs/figures.md, "tokens per chunk"): each content-bearing
// chunk carries at least one token, the chunk the tokenizer counts smallest
// carries exactly one, and the tokens beyond one a chunk are shared in
// proportion to how much more the tokenizer counted in it than in the
// smallest: t = 1 + (c − c_min) × (U − N) / Σ(c − c_min), rounded by largest
// remainder so that they sum to U. This is exact when the tokenizer's count
// is any affine function of the server's (a fixed ratio, or an offset per
// chunk); when every chunk counts the same, the extra tokens are spread
// evenly. When the server reports fewer tokens than there are chunks, the
// counts are scaled in proportion instead (some chunks then carry none).
// Without usage, or without per-chunk counts, it does nothing.
func (r *Record) ReconcileChunkTokens() {
	c := r.ChunkTokens
	u := r.UsageTokens
	if len(c) == 0 || u < 0 {
		return
	}
	sum, lo := 0, c[0]
	for _, v := range c {
		sum += int(v)
		lo = min(lo, v)
	}
	if sum == u {
		return
	}
	n := len(c)
	w := make([]float64, n)
	var base int
	var extra, total float64
	if u >= n {
		base, extra = 1, float64(u-n)
		for i, v := range c {
			w[i] = float64(v - lo)
			total += w[i]
		}
	} else {
		extra = float64(u)
		for i, v := range c {
			w[i] = float64(max(v, 0))
			total += w[i]
		}
	}
	if total == 0 {
		for i := range w {
			w[i] = 1
		}
		total = float64(n)
	}
	type rem struct {
		i    int
		frac float64
	}
	rems := make([]rem, n)
	given := 0
	for i := range c {
		q := extra * w[i] / total
		f := int(q)
		c[i] = int32(base + f)
		given += base + f
		rems[i] = rem{i, q - float64(f)}
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].frac > rems[b].frac })
	for k := 0; given < u; k++ {
		c[rems[k%n].i]++
		given++
	}
}
