package vector

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"

	"github.com/spate-dev/spate/result"
)

// The joint figures of seed 004 §4.3: each query's latency is sampled
// with its recall and whether it found the true nearest neighbour (Hit),
// so that one can read the hit rate in each latency band and the tail
// latency at each recall level, not only the two side by side.

// RecallLevels are the recall@k levels the latency is read at: the seed's
// 92 % (its index-rebuild line) and 95 % (its precision target), and
// perfect recall.
var RecallLevels = []float64{0.92, 0.95, 1}

// Samples a percentile needs before it is given: a P99 from fewer than 100
// queries, or a P99.9 from fewer than 1,000, is its slice's maximum, not a
// tail estimate.
const (
	minForP99  = 100
	minForP999 = 1000
)

// Joint computes the joint figures of a stage's successful queries, given
// in order of completion: latency in ms, recall@k and Hit of each. It
// returns the latency bands (cut at the stage's P50, P90, P99 and P99.9)
// with their queries' mean recall and hit rate, and the recall levels
// (recall ≥ each of RecallLevels, and below the lowest) with their
// latency percentiles, and warnings where slices are too small.
func Joint(lat, recall []float64, hit []bool) ([]result.LatencyBand, []result.RecallLevel, []string) {
	n := len(lat)
	if n == 0 || len(recall) != n || len(hit) != n {
		return nil, nil, nil
	}
	sorted := slices.Clone(lat)
	slices.Sort(sorted)
	pct := func(s []float64, p float64) float64 { // nearest rank (the rank rounded up, past float noise)
		i := int(math.Ceil(p*float64(len(s))/100-1e-9)) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	type cut struct {
		name string
		p    float64
	}
	cuts := []cut{{"p0-p50", 50}, {"p50-p90", 90}, {"p90-p99", 99}, {"p99-p99.9", 99.9}, {"p99.9-max", 100}}
	bands := make([]result.LatencyBand, len(cuts))
	lo := sorted[0]
	for i, c := range cuts {
		bands[i] = result.LatencyBand{Band: c.name, FromMS: lo, ToMS: pct(sorted, c.p)}
		lo = bands[i].ToMS
	}
	sums := make([]float64, len(bands))
	hits := make([]int, len(bands))
	for q, l := range lat {
		// A query belongs to the first band whose upper edge is above it
		// (the last band takes the maximum).
		b := len(bands) - 1
		for i := 0; i < len(bands)-1; i++ {
			if l < bands[i].ToMS {
				b = i
				break
			}
		}
		bands[b].Queries++
		sums[b] += recall[q]
		if hit[q] {
			hits[b]++
		}
	}
	for i := range bands {
		if bands[i].Queries > 0 {
			bands[i].MeanRecall = sums[i] / float64(bands[i].Queries)
			bands[i].HitRate = float64(hits[i]) / float64(bands[i].Queries)
		}
	}

	var levels []result.RecallLevel
	var warns []string
	level := func(name string, min, max float64, in func(r float64) bool) {
		var ls []float64
		for q, r := range recall {
			if in(r) {
				ls = append(ls, lat[q])
			}
		}
		lv := result.RecallLevel{Level: name, Min: min, Max: max, Queries: len(ls)}
		if len(ls) > 0 {
			slices.Sort(ls)
			p50 := pct(ls, 50)
			lv.P50MS = &p50
			if len(ls) >= minForP99 {
				v := pct(ls, 99)
				lv.P99MS = &v
			}
			if len(ls) >= minForP999 {
				v := pct(ls, 99.9)
				lv.P999MS = &v
			}
		}
		levels = append(levels, lv)
	}
	low := RecallLevels[0]
	level(fmt.Sprintf("recall < %g", low), 0, low, func(r float64) bool { return r < low })
	for _, t := range RecallLevels {
		name := fmt.Sprintf("recall >= %g", t)
		if t == 1 {
			name = "recall = 1"
		}
		level(name, t, 1, func(r float64) bool { return r >= t })
	}
	for _, lv := range levels {
		if lv.Queries > 0 && lv.P999MS == nil {
			warns = append(warns, fmt.Sprintf("%s: %d queries, too few for a P99.9 (%d needed) or a P99 (%d)", lv.Level, lv.Queries, minForP999, minForP99))
			break
		}
	}
	return bands, levels, warns
}

// WriteJoint prints, for each stage with vector figures, its hit rate,
// the hit rate and mean recall in each latency band, and the latency at
// each recall level.
func WriteJoint(w io.Writer, scs []result.Scenario) error {
	for _, sc := range scs {
		v := sc.Vector
		if v == nil || len(v.ByLatency) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s: top_k %d, hit rate %.4f (the exact nearest neighbour among the results)\n", sc.Name, v.K, v.HitRate)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "latency band\tms\tqueries\trecall mean\thit rate\t\n")
		for _, b := range v.ByLatency {
			fmt.Fprintf(tw, "%s\t%.2f-%.2f\t%d\t%.4f\t%.4f\t\n", b.Band, b.FromMS, b.ToMS, b.Queries, b.MeanRecall, b.HitRate)
		}
		fmt.Fprintf(tw, "recall level\t\tqueries\tp50 ms\tp99 ms\tp99.9 ms\t\n")
		opt := func(p *float64) string {
			if p == nil {
				return "-"
			}
			return fmt.Sprintf("%.2f", *p)
		}
		for _, l := range v.ByRecall {
			fmt.Fprintf(tw, "%s\t\t%d\t%s\t%s\t%s\t\n", l.Level, l.Queries, opt(l.P50MS), opt(l.P99MS), opt(l.P999MS))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("writing the joint vector figures: %w", err)
		}
	}
	return nil
}
