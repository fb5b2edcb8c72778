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

// nearSample bounds the members of a starting group each point is compared
// with for the nearest-neighbour linkage (see agglomerate).
const nearSample = 50

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

// agglomerate merges groups, the closest pair first, down to one group,
// and returns every level, from the starting groups to one. Two groups
// are as close as the geometric mean of two linkages:
//
//   - the average linkage (the mean cosine between a member of one and a
//     member of the other), which keeps apart intents that share a few
//     words here and there;
//   - the nearest-neighbour linkage: the mean, over the members of the
//     smaller group, of each one's largest cosine to a member of the
//     larger (0 at least; the members of each starting group compared are
//     the first nearSample of them). The queries of one intent asked in different
//     words (its sentence templates) each have a close neighbour across
//     them, through the words of the intent they share; two intents do
//     not. On average linkage alone a template of an intent is as far
//     from the rest of it as a small intent from its nearest neighbour,
//     and the small intent was merged away.
//
// This linkage is not reducible: a merge can be closer than the one before
// it. A level's linkage is the weakest merge made so far, so that cutting
// the sequence at a linkage still gives nested partitions.
func agglomerate(ctx context.Context, points []textembed.Vector, start []*group) ([]level, error) {
	n := len(start)
	gs := append([]*group(nil), start...)
	// to[p][g]: point p's largest cosine to a member of group g (0 at
	// least), over up to nearSample of g's members.
	to := make([][]float64, len(points))
	for p := range to {
		if p%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("merging clusters: %w", err)
			}
		}
		to[p] = make([]float64, n)
		for g, s := range start {
			for _, q := range s.members[:min(nearSample, len(s.members))] {
				if q != p {
					to[p][g] = max(to[p][g], points[p].Dot(points[q]))
				}
			}
		}
	}
	link := func(a, b int) float64 {
		small, large := a, b
		if len(gs[a].members) > len(gs[b].members) || len(gs[a].members) == len(gs[b].members) && a > b {
			small, large = b, a
		}
		nn := 0.0
		for _, p := range gs[small].members {
			nn += to[p][large]
		}
		nn /= float64(len(gs[small].members))
		return math.Sqrt(nn * math.Max(linkage(gs[a], gs[b]), 0))
	}
	alive := make([]bool, n)
	links := make([][]float64, n)
	for a := range n {
		alive[a] = true
		links[a] = make([]float64, n)
		for b := range a {
			links[a][b] = link(a, b)
			links[b][a] = links[a][b]
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
				if alive[b] && links[a][b] > best {
					ba, bb, best = a, b, links[a][b]
				}
			}
		}
		// b joins a.
		A, B := gs[ba], gs[bb]
		m := &group{sum: make([]float64, len(A.sum)), members: append(append([]int(nil), A.members...), B.members...)}
		floats.Add(m.sum, A.sum)
		floats.Add(m.sum, B.sum)
		for _, row := range to {
			row[ba] = max(row[ba], row[bb])
		}
		gs[ba], alive[bb] = m, false
		for c := range n {
			if alive[c] && c != ba {
				links[ba][c] = link(ba, c)
				links[c][ba] = links[ba][c]
			}
		}
		made := min(best, levels[len(levels)-1].made)
		levels[len(levels)-1].next = made
		levels = append(levels, snapshot(made))
	}
	return levels, nil
}
