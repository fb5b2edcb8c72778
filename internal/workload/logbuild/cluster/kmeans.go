package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"

	"github.com/spate-dev/spate/internal/workload/logbuild/textembed"
)

// Defaults of KMeansOptions.
const (
	DefaultRestarts = 5
	DefaultMaxIter  = 100
)

// KMeansOptions tunes KMeans.
type KMeansOptions struct {
	// Seed makes the run reproducible: the same points and seed give the
	// same clusters.
	Seed uint64
	// Restarts is the number of k-means++ initialisations; the run with
	// the lowest inertia is kept (0: DefaultRestarts).
	Restarts int
	// MaxIter bounds the Lloyd iterations of one restart (0: DefaultMaxIter).
	MaxIter int
}

// KMeans is the outcome of a k-means run.
type KMeans struct {
	K         int
	Assign    []int       // cluster of each point, 0..K-1
	Centroids [][]float64 // dense unit vectors, of the points' dimension
	// Inertia is the sum of the cosine distances (1 − cos) of the points
	// to their centroids.
	Inertia float64
	// Converged is false when a restart kept stopped at MaxIter with
	// assignments still changing.
	Converged bool
}

// ErrTooFewPoints is returned when there are fewer distinct points than
// clusters asked for.
var ErrTooFewPoints = errors.New("fewer distinct points than clusters")

// Dim returns one more than the largest index used by the points: the
// dimension of dense centroids.
func Dim(points []textembed.Vector) int {
	d := 0
	for _, p := range points {
		if n := p.Len(); n > 0 {
			d = max(d, int(p.Idx[n-1])+1)
		}
	}
	return d
}

// Run clusters unit-norm points into k clusters by spherical k-means: each
// point goes to the centroid of highest cosine similarity and each
// centroid is the normalised mean of its points. It starts from k-means++
// (seeding by cosine distance) and keeps the best of several restarts.
func Run(ctx context.Context, points []textembed.Vector, k int, o KMeansOptions) (*KMeans, error) {
	if k < 1 {
		return nil, fmt.Errorf("k-means: k = %d, want at least 1", k)
	}
	if len(points) < k {
		return nil, fmt.Errorf("k-means with k = %d on %d points: %w", k, len(points), ErrTooFewPoints)
	}
	restarts, maxIter := o.Restarts, o.MaxIter
	if restarts <= 0 {
		restarts = DefaultRestarts
	}
	if maxIter <= 0 {
		maxIter = DefaultMaxIter
	}
	dim := Dim(points)
	var best *KMeans
	for r := 0; r < restarts; r++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("k-means: %w", err)
		}
		rng := rand.New(rand.NewPCG(o.Seed, uint64(r)+0x9e3779b97f4a7c15))
		cents, ok := seedPlusPlus(points, dim, k, rng)
		if !ok {
			return nil, fmt.Errorf("k-means with k = %d: %w", k, ErrTooFewPoints)
		}
		km := lloyd(points, cents, maxIter)
		if best == nil || km.Inertia < best.Inertia {
			best = km
		}
	}
	return best, nil
}

// cosDist is the cosine distance 1 − p·c of a unit point p to a unit
// centroid c.
func cosDist(p textembed.Vector, c []float64) float64 {
	return math.Max(0, 1-p.DotDense(c))
}

// unitize scales c to unit norm (a zero c stays zero).
func unitize(c []float64) {
	if n := floats.Norm(c, 2); n > 0 {
		floats.Scale(1/n, c)
	}
}

// seedPlusPlus picks k initial centroids by k-means++: the first uniformly,
// each next one with probability proportional to its cosine distance to
// the nearest centroid chosen so far. It reports false when fewer than k
// distinct points exist.
func seedPlusPlus(points []textembed.Vector, dim, k int, rng *rand.Rand) ([][]float64, bool) {
	cents := make([][]float64, 0, k)
	add := func(i int) []float64 {
		c := make([]float64, dim)
		points[i].AddTo(c, 1)
		unitize(c)
		cents = append(cents, c)
		return c
	}
	c := add(rng.IntN(len(points)))
	d := make([]float64, len(points))
	for i, p := range points {
		d[i] = cosDist(p, c)
	}
	for len(cents) < k {
		total := floats.Sum(d)
		if total <= 1e-9 {
			return nil, false
		}
		x := rng.Float64() * total
		pick := -1
		for i, di := range d {
			if di <= 1e-12 {
				continue
			}
			pick = i
			if x -= di; x < 0 {
				break
			}
		}
		c = add(pick)
		for i, p := range points {
			d[i] = math.Min(d[i], cosDist(p, c))
		}
	}
	return cents, true
}

// nearest returns the centroid nearest p and its cosine distance (ties go
// to the lowest index).
func nearest(p textembed.Vector, cents [][]float64) (int, float64) {
	best, bs := 0, math.Inf(-1)
	for c := range cents {
		if s := p.DotDense(cents[c]); s > bs {
			best, bs = c, s
		}
	}
	return best, math.Max(0, 1-bs)
}

// lloyd runs Lloyd iterations from the given centroids until the
// assignments stop changing or maxIter is reached.
func lloyd(points []textembed.Vector, cents [][]float64, maxIter int) *KMeans {
	k := len(cents)
	km := &KMeans{K: k, Assign: make([]int, len(points)), Centroids: cents}
	for i := range km.Assign {
		km.Assign[i] = -1
	}
	counts := make([]int, k)
	dists := make([]float64, len(points))
	for iter := 0; iter < maxIter; iter++ {
		changed := 0
		for i, p := range points {
			c, d := nearest(p, cents)
			dists[i] = d
			if km.Assign[i] != c {
				km.Assign[i] = c
				changed++
			}
		}
		if changed == 0 {
			km.Converged = true
			break
		}
		// Update: each centroid is the normalised mean of its points.
		clear(counts)
		for c := range cents {
			clear(cents[c])
		}
		for i, p := range points {
			counts[km.Assign[i]]++
			p.AddTo(cents[km.Assign[i]], 1)
		}
		for c := range cents {
			if counts[c] > 0 {
				continue
			}
			// An empty cluster restarts at the point farthest from its
			// centroid, taken from a cluster that can spare it.
			far := -1
			for i := range points {
				if counts[km.Assign[i]] > 1 && (far < 0 || dists[i] > dists[far]) {
					far = i
				}
			}
			if far < 0 {
				continue
			}
			counts[km.Assign[far]]--
			points[far].AddTo(cents[km.Assign[far]], -1)
			counts[c] = 1
			points[far].AddTo(cents[c], 1)
			km.Assign[far], dists[far] = c, 0
		}
		for c := range cents {
			unitize(cents[c])
		}
	}
	// Final assignment to the final centroids (a no-op when converged).
	km.Inertia = 0
	for i, p := range points {
		c, d := nearest(p, cents)
		km.Assign[i] = c
		km.Inertia += d
	}
	return km
}
