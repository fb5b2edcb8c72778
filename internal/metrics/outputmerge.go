package metrics

import (
	"maps"
	"slices"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spate-dev/spate/result"
)

// MergeOutput combines the output figures of one stage's shards (spate
// merge): the counts add up, the rates are computed again from them, and
// each input-length bucket's distributions are summarised from hists, the
// merged histograms keyed as in the result (ctx/BUCKET/METRIC). ok is false
// when a shard's figures lack the counts a rate needs (a result written
// before they were kept): the merge then leaves the section out.
func MergeOutput(parts []*result.Output, hists map[string]*hdr.Histogram) (o *result.Output, ok bool) {
	o = &result.Output{FinishReasons: map[string]int{}}
	buckets := map[string]*result.ContextBucket{}
	var withFinish int
	if !slices.ContainsFunc(parts, func(p *result.Output) bool { return p != nil }) {
		return nil, true
	}
	for _, p := range parts {
		if p == nil {
			continue
		}
		if (p.TruncationRate != nil && p.Judged == 0) || (p.TokenDropRate != nil && p.ExpectedTokens == 0) {
			return nil, false
		}
		for k, v := range p.FinishReasons {
			o.FinishReasons[k] += v
			if k != "missing" {
				withFinish += v
			}
		}
		o.FinishLength += p.FinishLength
		o.Truncated += p.Truncated
		o.Judged += p.Judged
		o.ExactRequests += p.ExactRequests
		o.DroppedTokens += p.DroppedTokens
		o.ExpectedTokens += p.ExpectedTokens
		o.ContextRejected += p.ContextRejected
		o.Warnings = append(o.Warnings, p.Warnings...)
		for _, b := range p.Context {
			m := buckets[b.Bucket]
			if m == nil {
				m = &result.ContextBucket{Bucket: b.Bucket, FromTokens: b.FromTokens, ToTokens: b.ToTokens, Metrics: map[string]result.Dist{}}
				buckets[b.Bucket] = m
			}
			m.Requests += b.Requests
			m.Failed += b.Failed
			m.ContextRejected += b.ContextRejected
			m.Truncated += b.Truncated
			m.Checked += b.Checked
			m.Passed += b.Passed
		}
	}
	if o.Judged > 0 {
		o.TruncationRate = ratio(o.Truncated, o.Judged)
	}
	if withFinish > 0 {
		o.FinishLengthRate = ratio(o.FinishLength, withFinish)
	}
	if o.ExpectedTokens > 0 {
		v := float64(o.DroppedTokens) / float64(o.ExpectedTokens)
		o.TokenDropRate = &v
	}
	slices.Sort(o.Warnings)
	o.Warnings = slices.Compact(o.Warnings)
	for _, name := range slices.SortedFunc(maps.Keys(buckets), func(a, b string) int { return buckets[a].FromTokens - buckets[b].FromTokens }) {
		b := buckets[name]
		if ok := b.Requests - b.Failed; ok > 0 {
			b.TruncationRate = float64(b.Truncated) / float64(ok)
		}
		if b.Checked > 0 {
			b.CheckPassRate = ratio(b.Passed, b.Checked)
		}
		for _, m := range []string{TTFT, TPOT, E2E} {
			if h := hists[bucketHistKey(name, m)]; h != nil && h.TotalCount() > 0 {
				b.Metrics[m] = Summarize(h, 1000)
			}
		}
		o.Context = append(o.Context, *b)
	}
	return o, true
}
