package cluster

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/spate-dev/spate/internal/workload/logbuild/textembed"
)

// Defaults of Options.
const (
	DefaultKMax     = 20
	DefaultSamples  = 10
	DefaultTopTerms = 5
)

// Options says how to cluster a log.
type Options struct {
	// K is the number of clusters; 0 chooses it by silhouette among
	// 2..KMax.
	K int
	// KMax bounds the k tried when K is 0 (0: DefaultKMax).
	KMax int
	// Samples is the number of representatives kept per cluster (0:
	// DefaultSamples).
	Samples int
	// Seed makes the clustering reproducible.
	Seed uint64
	// Restarts and MaxIter tune each k-means run (see KMeansOptions).
	Restarts, MaxIter int
	// SilhouetteSample bounds the points the silhouette is computed on
	// (0: DefaultSilhouetteSample).
	SilhouetteSample int
	// TopTerms is the number of top terms reported per cluster (0:
	// DefaultTopTerms).
	TopTerms int
}

// KScore is the silhouette of the clustering with K clusters.
type KScore struct {
	K          int     `json:"k"`
	Silhouette float64 `json:"silhouette"`
	// SilhouetteCI95 is the half-width of the silhouette's 95 % interval
	// (see Distances.SilhouetteCI).
	SilhouetteCI95 float64 `json:"silhouette_ci95"`
	// Inertia is the sum of cosine distances to the centroids.
	Inertia float64 `json:"inertia"`
}

// Cluster is one cluster of queries.
type Cluster struct {
	// Label is "c<N>-<top term>", N counting from 1 in order of size.
	Label    string
	Size     int     // queries in the cluster
	Share    float64 // Size over the queries clustered
	TopTerms []string
	// Samples are the representatives: the cluster's distinct queries
	// nearest its centroid, nearest first (Samples[0] is its example).
	Samples []string
	// Members are the indices (into the texts given to Build) of its
	// queries.
	Members []int
}

// Result is a clustered log.
type Result struct {
	Queries int // texts given
	// Skipped are the indices of texts left out because they embedded to
	// nothing (e.g. only stop words).
	Skipped []int
	// K is the number of clusters, and KChosenBy "given" or "silhouette"
	// (or "distinct points" when there were fewer than asked).
	K         int
	KChosenBy string
	// Scores are the silhouettes of the k tried (all when chosen by
	// silhouette, else the one k run), and SilhouetteSampled the number
	// of points they were computed on.
	Scores            []KScore
	SilhouetteSampled int
	Clusters          []Cluster
	Warnings          []string
}

// Build clusters texts by their vectors (one per text, L2-normalised),
// labels the clusters with the top terms of terms (a TF-IDF model of the
// texts) and keeps the representatives of each.
func Build(ctx context.Context, texts []string, vecs []textembed.Vector, terms *textembed.Model, o Options) (*Result, error) {
	if len(texts) != len(vecs) {
		return nil, fmt.Errorf("clustering: %d texts but %d vectors", len(texts), len(vecs))
	}
	if o.K < 0 {
		return nil, fmt.Errorf("clustering: k = %d, want 0 (auto) or more", o.K)
	}
	kmax, samples, top := o.KMax, o.Samples, o.TopTerms
	if kmax <= 0 {
		kmax = DefaultKMax
	}
	if samples <= 0 {
		samples = DefaultSamples
	}
	if top <= 0 {
		top = DefaultTopTerms
	}
	res := &Result{Queries: len(texts)}
	var points []textembed.Vector
	var index []int // point → text
	for i, v := range vecs {
		if v.Len() == 0 {
			res.Skipped = append(res.Skipped, i)
			continue
		}
		points = append(points, v)
		index = append(index, i)
	}
	if len(res.Skipped) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d of %d queries had nothing to embed (only stop words or punctuation) and were left out", len(res.Skipped), len(texts)))
	}
	if len(points) == 0 {
		return nil, fmt.Errorf("clustering: none of the %d queries has anything to embed", len(texts))
	}
	distinct := countDistinct(points)
	kopt := KMeansOptions{Seed: o.Seed, Restarts: o.Restarts, MaxIter: o.MaxIter}
	var km *KMeans
	var err error
	switch {
	case o.K > 0 && o.K <= distinct:
		res.K, res.KChosenBy = o.K, "given"
	case o.K > 0:
		res.K, res.KChosenBy = distinct, "distinct points"
		res.Warnings = append(res.Warnings, fmt.Sprintf("k = %d asked, but the log has only %d distinct queries: using k = %d", o.K, distinct, distinct))
	case distinct < 3:
		res.K, res.KChosenBy = distinct, "distinct points"
		res.Warnings = append(res.Warnings, fmt.Sprintf("only %d distinct queries: k = %d without a silhouette search", distinct, distinct))
	default:
		res.KChosenBy = "silhouette"
	}
	D := NewDistances(points, o.SilhouetteSample, o.Seed)
	res.SilhouetteSampled = len(D.Sample)
	if len(D.Sample) < len(points) {
		res.Warnings = append(res.Warnings, fmt.Sprintf("silhouette computed on a random sample of %d of %d queries", len(D.Sample), len(points)))
	}
	if res.KChosenBy == "silhouette" {
		hi := min(kmax, distinct-1)
		bestS := math.Inf(-1)
		for k := 2; k <= hi; k++ {
			m, err := Run(ctx, points, k, kopt)
			if err != nil {
				return nil, fmt.Errorf("clustering with k = %d: %w", k, err)
			}
			s, ci := D.SilhouetteCI(m.Assign, k)
			res.Scores = append(res.Scores, KScore{K: k, Silhouette: s, SilhouetteCI95: ci, Inertia: m.Inertia})
			if s > bestS {
				bestS, km, res.K = s, m, k
			}
		}
		if res.K == hi && hi < distinct-1 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the silhouette was highest at the largest k tried (%d): the log may hold finer clusters; raise --k-max or set --k", hi))
		}
	} else {
		if km, err = Run(ctx, points, res.K, kopt); err != nil {
			return nil, fmt.Errorf("clustering with k = %d: %w", res.K, err)
		}
		s, ci := D.SilhouetteCI(km.Assign, res.K)
		res.Scores = []KScore{{K: res.K, Silhouette: s, SilhouetteCI95: ci, Inertia: km.Inertia}}
	}
	if !km.Converged {
		res.Warnings = append(res.Warnings, "k-means stopped at its iteration limit before the clusters settled")
	}
	res.Clusters = describe(texts, points, index, km, terms, samples, top)
	return res, nil
}

// countDistinct counts the distinct vectors.
func countDistinct(points []textembed.Vector) int {
	seen := map[string]bool{}
	var b []byte
	for _, p := range points {
		b = b[:0]
		for k, i := range p.Idx {
			b = binary.LittleEndian.AppendUint32(b, uint32(i))
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.Val[k]))
		}
		seen[string(b)] = true
	}
	return len(seen)
}

// describe turns a k-means result into labelled clusters, ordered by size
// (then by their first query), with representatives and top terms.
func describe(texts []string, points []textembed.Vector, index []int, km *KMeans, terms *textembed.Model, samples, top int) []Cluster {
	cs := make([]Cluster, km.K)
	near := make([][]int, km.K) // point indices
	for p, c := range km.Assign {
		cs[c].Members = append(cs[c].Members, index[p])
		near[c] = append(near[c], p)
	}
	for c := range cs {
		d := make(map[int]float64, len(near[c]))
		for _, p := range near[c] {
			d[p] = cosDist(points[p], km.Centroids[c])
		}
		sort.SliceStable(near[c], func(a, b int) bool { return d[near[c][a]] < d[near[c][b]] })
		seen := map[string]bool{}
		for _, p := range near[c] {
			t := texts[index[p]]
			if seen[t] {
				continue
			}
			seen[t] = true
			if cs[c].Samples = append(cs[c].Samples, t); len(cs[c].Samples) == samples {
				break
			}
		}
		cs[c].Size = len(cs[c].Members)
		cs[c].Share = float64(cs[c].Size) / float64(len(points))
		cs[c].TopTerms = topTerms(texts, cs[c].Members, terms, top)
	}
	out := make([]Cluster, 0, len(cs))
	for _, c := range cs {
		if c.Size > 0 {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].Size != out[b].Size {
			return out[a].Size > out[b].Size
		}
		return out[a].Members[0] < out[b].Members[0]
	})
	for i := range out {
		out[i].Label = fmt.Sprintf("c%d", i+1)
		for _, t := range out[i].TopTerms {
			if !strings.Contains(t, " ") {
				out[i].Label += "-" + t
				break
			}
		}
	}
	return out
}

// topTerms returns the n terms of largest weight in the TF-IDF centroid of
// the member texts (the mean of their normalised term weights); ties go
// to the term first in alphabetical order.
func topTerms(texts []string, members []int, terms *textembed.Model, n int) []string {
	if terms == nil || len(members) == 0 {
		return nil
	}
	sum := map[string]float64{}
	for _, i := range members {
		for t, w := range terms.Weights(texts[i]) {
			sum[t] += w
		}
	}
	all := make([]string, 0, len(sum))
	for t := range sum {
		all = append(all, t)
	}
	sort.Slice(all, func(a, b int) bool {
		if sum[all[a]] != sum[all[b]] {
			return sum[all[a]] > sum[all[b]]
		}
		return all[a] < all[b]
	})
	return all[:min(n, len(all))]
}
