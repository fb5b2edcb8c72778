package cluster

import (
	"github.com/spate-dev/spate/internal/workload/logbuild/textembed"
)

// Defaults of the noise rules (see Options).
const (
	// DefaultNeighbourCos is the cosine a query must reach with at least
	// one other query not to be noise.
	DefaultNeighbourCos = 0.1
	// maxCandidates bounds the queries a query is compared with when its
	// neighbour is looked for, per term it holds.
	maxCandidates = 2000
)

// lonely returns the points that have no neighbour: no other point at a
// cosine of at least minCos. Only points sharing a dimension can be that
// close, so each point is compared with the points of an inverted index
// of its dimensions (at most maxCandidates a dimension), stopping at the
// first neighbour found.
func lonely(points []textembed.Vector, minCos float64) []bool {
	post := map[int32][]int{}
	for i, p := range points {
		for _, d := range p.Idx {
			if len(post[d]) < maxCandidates {
				post[d] = append(post[d], i)
			}
		}
	}
	out := make([]bool, len(points))
	seen := map[int]bool{}
	for i, p := range points {
		clear(seen)
		found := false
		for _, d := range p.Idx {
			for _, j := range post[d] {
				if j == i || seen[j] {
					continue
				}
				seen[j] = true
				if p.Dot(points[j]) >= minCos {
					found = true
					break
				}
			}
			if found {
				break
			}
		}
		out[i] = !found
	}
	return out
}
