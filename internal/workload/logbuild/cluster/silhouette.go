package cluster

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/spate-dev/spate/internal/workload/logbuild/textembed"
)

// DefaultSilhouetteSample is the number of points the silhouette is
// computed on when there are more (it needs all pairwise distances).
const DefaultSilhouetteSample = 1000

// Distances holds the pairwise cosine distances (1 − cosine similarity) of
// a sample of unit vectors, computed once and reused to score several
// clusterings of them. (Computed as (|a|² + |b|²)/2 − a·b, which is
// 1 − cos for unit vectors and half the squared Euclidean distance.)
type Distances struct {
	// Sample are the indices of the sampled points, increasing.
	Sample []int
	d      []float64 // len(Sample)², row-major
}

// NewDistances computes the pairwise distances of all points when there
// are at most max (0: DefaultSilhouetteSample), else of max points drawn at
// random with seed.
func NewDistances(points []textembed.Vector, max int, seed uint64) *Distances {
	if max <= 0 {
		max = DefaultSilhouetteSample
	}
	idx := make([]int, len(points))
	for i := range idx {
		idx[i] = i
	}
	if len(points) > max {
		rng := rand.New(rand.NewPCG(seed, 0x5151))
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		idx = idx[:max]
		slices.Sort(idx)
	}
	m := len(idx)
	D := &Distances{Sample: idx, d: make([]float64, m*m)}
	norms := make([]float64, m)
	for a, i := range idx {
		norms[a] = points[i].Norm2()
	}
	for a := 0; a < m; a++ {
		for b := a + 1; b < m; b++ {
			x := math.Max(0, (norms[a]+norms[b])/2-points[idx[a]].Dot(points[idx[b]]))
			D.d[a*m+b], D.d[b*m+a] = x, x
		}
	}
	return D
}

// Silhouette is the mean silhouette coefficient of the sampled points
// under the clustering assign (of all points, k clusters): for each point,
// (b − a) / max(a, b) with a its mean cosine distance to the other sampled
// points of its cluster and b the least mean distance to the sampled points
// of another cluster; 0 for a point alone in its cluster (as in
// scikit-learn). It lies in [−1, 1]; higher is better separated.
func (D *Distances) Silhouette(assign []int, k int) float64 {
	mean, _ := D.SilhouetteCI(assign, k)
	return mean
}

// SilhouetteCI returns the mean silhouette and the half-width of its 95 %
// confidence interval, t(0.975, m−1) · sd / √m over the m sampled points'
// coefficients. The points of one log are not independent draws, so the
// interval is a guide to the sampling noise, not a test (0 when m < 2).
func (D *Distances) SilhouetteCI(assign []int, k int) (mean, half float64) {
	m := len(D.Sample)
	if m < 2 || k < 2 {
		return 0, 0
	}
	lab := make([]int, m)
	size := make([]int, k)
	for a, i := range D.Sample {
		lab[a] = assign[i]
		size[lab[a]]++
	}
	sum := make([]float64, k)
	s := make([]float64, m)
	for a := 0; a < m; a++ {
		clear(sum)
		row := D.d[a*m : (a+1)*m]
		for b, x := range row {
			sum[lab[b]] += x
		}
		own := lab[a]
		if size[own] < 2 {
			continue // s = 0
		}
		ai := sum[own] / float64(size[own]-1)
		bi := math.Inf(1)
		for c := 0; c < k; c++ {
			if c != own && size[c] > 0 {
				bi = math.Min(bi, sum[c]/float64(size[c]))
			}
		}
		if math.IsInf(bi, 1) {
			continue
		}
		if den := math.Max(ai, bi); den > 0 {
			s[a] = (bi - ai) / den
		}
	}
	mean, sd := stat.MeanStdDev(s, nil)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(m - 1)}.Quantile(0.975)
	return mean, t * sd / math.Sqrt(float64(m))
}
