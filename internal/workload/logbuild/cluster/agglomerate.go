package cluster

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"

	"github.com/spate-dev/spate/internal/workload/logbuild/textembed"
)

// group is a set of points: the sum of their unit vectors and their
// indices.
type group struct {
	sum     []float64
	members []int
}

// linkage is the average linkage of two groups: the mean cosine between a
// member of a and a member of b, S_a·S_b / (|a||b|) from their sums.
func linkage(a, b *group) float64 {
	return floats.Dot(a.sum, b.sum) / float64(len(a.members)*len(b.members))
}

// groupsOf returns the non-empty groups of an assignment of points to k
// clusters, in cluster order.
func groupsOf(points []textembed.Vector, assign []int, k, dim int) []*group {
	gs := make([]*group, k)
	for c := range gs {
		gs[c] = &group{sum: make([]float64, dim)}
	}
	for i, p := range points {
		g := gs[assign[i]]
		p.AddTo(g.sum, 1)
		g.members = append(g.members, i)
	}
	out := gs[:0]
	for _, g := range gs {
		if len(g.members) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// level is a partition of the points reached by agglomeration: its groups,
// and the linkage of the merge that made it (Made, +Inf for the starting
// groups) and of the merge that would follow it (Next, −Inf for one
// group).
type level struct {
	groups     []*group
	made, next float64
}

// agglomerate merges groups by average linkage, the closest pair first,
// down to one group (UPGMA). Average linkage is reducible, so each merge's
// linkage is at most the one before: cutting the sequence at a linkage
// gives nested partitions. It returns every level, from the starting
// groups to one.
func agglomerate(ctx context.Context, start []*group) ([]level, error) {
	n := len(start)
	gs := append([]*group(nil), start...)
	alive := make([]bool, n)
	link := make([][]float64, n)
	for a := range n {
		alive[a] = true
		link[a] = make([]float64, n)
		for b := range a {
			link[a][b] = linkage(gs[a], gs[b])
			link[b][a] = link[a][b]
		}
	}
	snapshot := func(made float64) level {
		var l level
		for i, g := range gs {
			if alive[i] {
				l.groups = append(l.groups, g)
			}
		}
		l.made, l.next = made, math.Inf(-1)
		return l
	}
	levels := []level{snapshot(math.Inf(1))}
	for left := n; left > 1; left-- {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("merging clusters: %w", err)
		}
		ba, bb, best := -1, -1, math.Inf(-1)
		for a := range n {
			if !alive[a] {
				continue
			}
			for b := a + 1; b < n; b++ {
				if alive[b] && link[a][b] > best {
					ba, bb, best = a, b, link[a][b]
				}
			}
		}
		levels[len(levels)-1].next = best
		// b joins a: a's linkages are the size-weighted means of both.
		A, B := gs[ba], gs[bb]
		m := &group{sum: make([]float64, len(A.sum)), members: append(append([]int(nil), A.members...), B.members...)}
		floats.Add(m.sum, A.sum)
		floats.Add(m.sum, B.sum)
		na, nb := float64(len(A.members)), float64(len(B.members))
		for c := range n {
			if alive[c] && c != ba && c != bb {
				link[ba][c] = (na*link[ba][c] + nb*link[bb][c]) / (na + nb)
				link[c][ba] = link[ba][c]
			}
		}
		gs[ba], alive[bb] = m, false
		levels = append(levels, snapshot(best))
	}
	return levels, nil
}
