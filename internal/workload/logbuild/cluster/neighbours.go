package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/spate-dev/spate/internal/workload/logbuild/textembed"
)

const (
	// nearCount is the number of nearest neighbours kept per query for the
	// nearest-neighbour linkage.
	nearCount = 50
	// nearSample bounds the queries each query is compared with to find
	// its nearest neighbours (a random sample of them when there are more):
	// the search is nearSample dot products a query.
	nearSample = 2000
)

// neighbour is a query and its cosine to the query whose neighbour it is.
type neighbour struct {
	p   int
	cos float64
}

// nearestQueries returns, for each point, its nearCount nearest other points
// (largest cosine first) among all points, or among nearSample of them
// drawn with seed when there are more.
func nearestQueries(ctx context.Context, points []textembed.Vector, seed uint64) ([][]neighbour, error) {
	cand := make([]int, len(points))
	for i := range cand {
		cand[i] = i
	}
	if len(cand) > nearSample {
		rng := rand.New(rand.NewPCG(seed, 0x4e4e))
		rng.Shuffle(len(cand), func(a, b int) { cand[a], cand[b] = cand[b], cand[a] })
		cand = cand[:nearSample]
		slices.Sort(cand)
	}
	out := make([][]neighbour, len(points))
	var row []neighbour
	for p := range points {
		if p%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("finding the nearest queries: %w", err)
			}
		}
		row = row[:0]
		for _, q := range cand {
			if q != p {
				row = append(row, neighbour{q, points[p].Dot(points[q])})
			}
		}
		slices.SortFunc(row, func(a, b neighbour) int {
			switch {
			case a.cos > b.cos:
				return -1
			case a.cos < b.cos:
				return 1
			}
			return a.p - b.p
		})
		out[p] = append([]neighbour(nil), row[:min(nearCount, len(row))]...)
	}
	return out, nil
}
