package cluster

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/floats"

	"github.com/spate-dev/spate/internal/workload/logbuild/textembed"
)

// Defaults of Options.
const (
	DefaultKMax     = 20
	DefaultSamples  = 10
	DefaultTopTerms = 5
	// DefaultMinSize and DefaultMinShare make the size floor of a cluster:
	// max(DefaultMinSize, DefaultMinShare of the queries clustered).
	DefaultMinSize  = 5
	DefaultMinShare = 0.02
	// DefaultContentShare is the least share of a query's TF-IDF weight
	// left after boilerplate weighting for it to have a topic.
	DefaultContentShare = 0.25
	// MinNoiseLog is the least number of queries with a topic for queries
	// with no neighbour to be taken for noise.
	MinNoiseLog = 20
	// DefaultFarCos is the least cosine to its cluster's centroid a query
	// needs to stay in the cluster.
	DefaultFarCos = 0.05
)

// Options says how to cluster a log.
type Options struct {
	// K is the number of clusters; 0 chooses it (see Build).
	K int
	// KMax bounds the k chosen when K is 0 (0: DefaultKMax).
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
	// MinSize is the size floor of a cluster (0: max(DefaultMinSize,
	// DefaultMinShare of the queries clustered)); the queries of a smaller
	// group join the nearest cluster, or the unclustered bucket.
	MinSize int
}

// KScore describes one candidate k: the coarsest partition of the merge
// tree with K clusters of at least the size floor.
type KScore struct {
	K int `json:"k"`
	// Linkage is the linkage (see agglomerate: the geometric mean of the
	// average and the nearest-neighbour linkage) of the merge that made
	// the partition, Next that of the merge after it, and
	// Gap their ratio: how much more alike the groups merged so far were
	// than the two merged next.
	Linkage float64 `json:"linkage"`
	Next    float64 `json:"next_linkage"`
	Gap     float64 `json:"gap"`
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

// Unclustered is the bucket of queries that belong to no cluster, by
// reason.
type Unclustered struct {
	// Empty had nothing to embed (only stop words or punctuation);
	// Boilerplate only boilerplate (greetings, sign-offs: less than
	// DefaultContentShare of their weight left); Lonely no query alike (no
	// other at a cosine of DefaultNeighbourCos); Outliers were alike only
	// to queries of groups below the size floor, or far from every
	// cluster's centroid.
	Empty, Boilerplate, Lonely, Outliers int
	// Members are the indices of the queries, in log order.
	Members []int
}

// Len is the number of unclustered queries.
func (u Unclustered) Len() int { return len(u.Members) }

// Result is a clustered log.
type Result struct {
	Queries int // texts given
	// Unclustered are the queries in no cluster (noise).
	Unclustered Unclustered
	// K is the number of clusters, and KChosenBy "given", "linkage gap",
	// "one topic" or "distinct points".
	K         int
	KChosenBy string
	// MinSize is the size floor applied.
	MinSize int
	// Scores are the candidate k of the merge tree (see KScore), smallest
	// k first.
	Scores []KScore
	// MeanCosine is the mean cosine between two clustered queries; merges
	// below a quarter of it join unrelated groups.
	MeanCosine float64
	// Silhouette is the mean silhouette of the clustered queries (cosine
	// distance) with the half-width of its 95 % interval, computed on
	// SilhouetteSampled of them.
	Silhouette, SilhouetteCI95 float64
	SilhouetteSampled          int
	Clusters                   []Cluster
	Warnings                   []string
}

// Build clusters texts by their vectors (one per text, L2-normalised),
// labels the clusters with the top terms of terms (the TF-IDF model of the
// texts, with its boilerplate weights when learnt) and keeps the
// representatives of each.
//
// Noise first goes to the unclustered bucket: texts with nothing to embed,
// texts that are only boilerplate (by terms), and texts with no neighbour
// (no other text at a cosine of DefaultNeighbourCos). The rest are
// over-clustered by k-means++ (about three groups per cluster that k may
// reach) and the groups merged into a tree, the closest first, by a
// linkage that needs both the mean cosine between their queries and, for
// each query of the smaller group, a close neighbour in the other (see
// agglomerate). A partition of the tree has K clusters when K of its
// groups reach the size floor. With K given, the coarsest such partition
// is kept; else, among k in 2..KMax, the one whose last merge most outdid
// the next (the largest linkage gap: the point where merging starts to
// join groups that have little in common), or the largest k whose gap is
// nearly as large (nextGapShare): a small intent that shares words with a
// larger one makes a clear gap of its own, above the largest one. The
// partition's clusters are refined by spherical
// k-means from their centroids; the texts of groups below the floor join
// the nearest cluster, and texts far from every centroid (cosine below
// DefaultFarCos) go to the unclustered bucket.
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
	un := &res.Unclustered
	var points []textembed.Vector
	var index []int // point → text
	for i, v := range vecs {
		switch {
		case v.Len() == 0:
			un.Empty++
			un.Members = append(un.Members, i)
		case terms != nil && terms.ContentShare(texts[i]) < DefaultContentShare:
			un.Boilerplate++
			un.Members = append(un.Members, i)
		default:
			points = append(points, v)
			index = append(index, i)
		}
	}
	// Noise: no neighbour (in a log large enough to tell).
	kept := points[:0]
	keptIdx := index[:0]
	for p, alone := range lonely(points, DefaultNeighbourCos) {
		if alone && len(points) >= MinNoiseLog {
			un.Lonely++
			un.Members = append(un.Members, index[p])
			continue
		}
		kept = append(kept, points[p])
		keptIdx = append(keptIdx, index[p])
	}
	points, index = kept, keptIdx
	if len(points) == 0 {
		return nil, fmt.Errorf("clustering: none of the %d queries has a topic shared with another query (%d with nothing to embed, %d only boilerplate, %d alone)", len(texts), un.Empty, un.Boilerplate, un.Lonely)
	}
	// Dense centroids need only the dimensions in use: renumber them.
	points = compact(points)
	res.MinSize = o.MinSize
	if res.MinSize <= 0 {
		n := float64(len(points))
		res.MinSize = max(min(DefaultMinSize, int(math.Ceil(n/10))), int(math.Ceil(DefaultMinShare*n)))
	}
	floor := min(res.MinSize, len(points))
	distinct := countDistinct(points)
	wantK := o.K
	switch {
	case o.K > distinct:
		res.Warnings = append(res.Warnings, fmt.Sprintf("k = %d asked, but the log has only %d distinct queries: using k = %d", o.K, distinct, distinct))
		wantK = distinct
	case o.K == 0 && distinct < 3:
		res.Warnings = append(res.Warnings, fmt.Sprintf("only %d distinct queries: k = %d without a search", distinct, distinct))
		wantK = distinct
	}
	kopt := KMeansOptions{Seed: o.Seed, Restarts: o.Restarts, MaxIter: o.MaxIter}
	dim := Dim(points)

	// Over-cluster, then merge: several trees, from different seeds.
	k0 := min(distinct, max(overFactor*kmax, overFactor*wantK, 12), max(2, len(points)/3))
	if wantK > 0 {
		k0 = min(distinct, max(k0, wantK))
	}
	trees := treeRuns
	if k0 <= 1 {
		trees = 1
	}
	// Merges below eps, a share of the mean cosine between two queries of
	// the log, join groups with less in common than two queries taken at
	// random: the gaps are measured against eps at least.
	res.MeanCosine = meanCosine(points)
	eps := unrelatedShare * res.MeanCosine
	var forest []tree
	for t := range trees {
		var levels []level
		if k0 <= 1 {
			levels = []level{{groups: groupsOf(points, make([]int, len(points)), 1, dim), made: math.Inf(1), next: math.Inf(-1)}}
		} else {
			topt := kopt
			topt.Seed = o.Seed + uint64(t)*0x9E3779B97F4A7C15
			km0, err := Run(ctx, points, k0, topt)
			if err != nil {
				return nil, fmt.Errorf("clustering with k = %d: %w", k0, err)
			}
			if levels, err = agglomerate(ctx, points, groupsOf(points, km0.Assign, km0.K, dim)); err != nil {
				return nil, fmt.Errorf("clustering: %w", err)
			}
		}
		forest = append(forest, newTree(levels, floor, max(kmax, wantK), eps))
	}
	// The gap of each k: the geometric mean over the trees (1 where a tree
	// has no partition of k).
	for k := 2; k <= kmax; k++ {
		logSum, seen := 0.0, 0
		var sc KScore
		for _, tr := range forest {
			if g, ok := tr.scores[k]; ok {
				logSum += math.Log(g.Gap)
				seen++
				sc = g
			}
		}
		if seen == 0 {
			continue
		}
		sc.Gap = math.Exp(logSum / float64(len(forest)))
		res.Scores = append(res.Scores, sc)
	}
	chosenK := 0
	switch {
	case wantK > 0:
		res.KChosenBy = "given"
		if wantK != o.K {
			res.KChosenBy = "distinct points"
		}
		chosenK = wantK
		if _, ok := forest[0].coarsest[wantK]; !ok {
			bestK := -1
			for k := range forest[0].coarsest {
				if k > 0 && (bestK < 0 || abs(k-wantK) < abs(bestK-wantK) || abs(k-wantK) == abs(bestK-wantK) && k > bestK) {
					bestK = k
				}
			}
			res.KChosenBy = "nearest to the given"
			res.Warnings = append(res.Warnings, fmt.Sprintf("k = %d asked, but the log has no partition with %d clusters of at least %d queries: using k = %d", wantK, wantK, floor, bestK))
			chosenK = bestK
		}
	case len(res.Scores) > 0:
		res.KChosenBy = "linkage gap"
		best := res.Scores[0]
		for _, sc := range res.Scores[1:] {
			if sc.Gap > best.Gap {
				best = sc
			}
		}
		chosenK = best.K
		// A clear gap at a larger k too: the merges between the two
		// joined groups far less alike than their own members and far
		// more alike than the rest (intents that share words, e.g. a
		// small topic and its neighbour). Keep them apart: the largest
		// k whose gap is nearly as clear wins.
		for _, sc := range res.Scores {
			if sc.K > chosenK && best.Gap > 1 && math.Log(sc.Gap) >= nextGapShare*math.Log(best.Gap) {
				chosenK = sc.K
			}
		}
		if best.Gap < clearGap {
			res.Warnings = append(res.Warnings, fmt.Sprintf("no k stands out (the largest linkage gap is %.2f, at k = %d): the clusters may be arbitrary cuts of fewer topics; set --k", best.Gap, best.K))
		}
		if chosenK == kmax && kmax < distinct {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the linkage gap chose the largest k tried (%d): the log may hold finer clusters; raise --k-max or set --k", kmax))
		}
	default:
		res.KChosenBy = "one topic"
	}
	// The tree whose partition of k has the largest gap (the first tree's
	// for k = 1; its last level, one group, when no k was found).
	levels := forest[0].levels
	chosen := len(levels) - 1
	if i, ok := forest[0].coarsest[chosenK]; ok {
		chosen = i
	}
	bestGap := math.Inf(-1)
	for _, tr := range forest {
		sc, scored := tr.scores[chosenK]
		if i, ok := tr.coarsest[chosenK]; ok && scored && sc.Gap > bestGap {
			levels, chosen, bestGap = tr.levels, i, sc.Gap
		}
	}
	lvl := levels[chosen]

	// Refine the chosen partition's clusters by spherical k-means from their
	// centroids; the groups below the floor have none.
	var cents [][]float64
	for _, g := range lvl.groups {
		if len(g.members) >= floor {
			c := append([]float64(nil), g.sum...)
			unitize(c)
			cents = append(cents, c)
		}
	}
	if len(cents) == 0 { // fewer queries than the floor: one cluster
		c := make([]float64, dim)
		for _, p := range points {
			p.AddTo(c, 1)
		}
		unitize(c)
		cents = [][]float64{c}
	}
	maxIter := o.MaxIter
	if maxIter <= 0 {
		maxIter = DefaultMaxIter
	}
	km := refine(points, cents, maxIter)
	if !km.Converged {
		res.Warnings = append(res.Warnings, "k-means stopped at its iteration limit before the clusters settled")
	}
	for p, c := range km.Assign {
		if c < 0 {
			un.Outliers++
			un.Members = append(un.Members, index[p])
		}
	}
	sort.Ints(un.Members)
	if n := un.Len(); n > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d of %d queries are in no cluster (%d with nothing to embed, %d only boilerplate, %d with no query alike, %d far from every cluster) and left out of the workload", n, len(texts), un.Empty, un.Boilerplate, un.Lonely, un.Outliers))
	}

	// Silhouette of the clustered points.
	var cp []textembed.Vector
	var ca []int
	for p, c := range km.Assign {
		if c >= 0 {
			cp = append(cp, points[p])
			ca = append(ca, c)
		}
	}
	D := NewDistances(cp, o.SilhouetteSample, o.Seed)
	res.SilhouetteSampled = len(D.Sample)
	res.Silhouette, res.SilhouetteCI95 = D.SilhouetteCI(ca, km.K)
	if len(D.Sample) < len(cp) {
		res.Warnings = append(res.Warnings, fmt.Sprintf("silhouette computed on a random sample of %d of %d queries", len(D.Sample), len(cp)))
	}
	res.Clusters = describe(texts, points, index, km, terms, samples, top)
	res.K = len(res.Clusters)
	return res, nil
}

const (
	// treeRuns is the number of merge trees grown (from different seeds) to
	// choose k by.
	treeRuns = 5
	// overFactor: the over-clustering makes overFactor groups per cluster
	// that k may reach.
	overFactor = 4
)

// tree is one merge tree: its levels, the coarsest level of each k (count
// of groups of at least the floor) and the score of each k in 2..kmax.
type tree struct {
	levels   []level
	coarsest map[int]int
	scores   map[int]KScore
}

func bigGroups(l level, floor int) int {
	n := 0
	for _, g := range l.groups {
		if len(g.members) >= floor {
			n++
		}
	}
	return n
}

func newTree(levels []level, floor, kmax int, eps float64) tree {
	t := tree{levels: levels, coarsest: map[int]int{}, scores: map[int]KScore{}}
	for i, l := range levels {
		t.coarsest[bigGroups(l, floor)] = i
	}
	for k := 2; k <= kmax; k++ {
		i, ok := t.coarsest[k]
		if !ok {
			continue
		}
		// The gap of k: the strongest merge that made a level of k over
		// the merge that ends them.
		made := math.Inf(-1)
		for j := i; j >= 0 && bigGroups(levels[j], floor) == k; j-- {
			made = max(made, levels[j].made)
		}
		if math.IsInf(made, 1) {
			made = 1
		}
		next := levels[i].next
		if math.IsInf(next, -1) { // one group: no merge follows
			next = 0
		}
		sc := KScore{K: k, Linkage: made, Next: next}
		sc.Gap = made / math.Max(next, eps)
		if eps <= 0 && next <= 0 {
			sc.Gap = 1
		}
		t.scores[k] = sc
	}
	return t
}

// compact renumbers the dimensions the points use as 0, 1, 2, ... in
// order (which keeps each point's indices sorted), so that dense vectors
// of them are as short as they can be.
func compact(points []textembed.Vector) []textembed.Vector {
	used := map[int32]bool{}
	for _, p := range points {
		for _, i := range p.Idx {
			used[i] = true
		}
	}
	dims := slices.Sorted(maps.Keys(used))
	rank := make(map[int32]int32, len(dims))
	for r, d := range dims {
		rank[d] = int32(r)
	}
	out := make([]textembed.Vector, len(points))
	for k, p := range points {
		idx := make([]int32, len(p.Idx))
		for j, i := range p.Idx {
			idx[j] = rank[i]
		}
		out[k] = textembed.Vector{Idx: idx, Val: p.Val}
	}
	return out
}

// clearGap is the linkage gap below which no k stands out.
const clearGap = 1.5

// nextGapShare: a k above the largest gap's is chosen instead when its
// gap is at least the largest to the power nextGapShare (on a log scale,
// at least half of it); the largest such k wins.
const nextGapShare = 0.5

// unrelatedShare is the share of the mean cosine between two queries of
// the log below which a merge joins unrelated groups.
const unrelatedShare = 0.25

// meanCosine is the mean cosine over pairs of distinct points (unit
// vectors): (|Σp|² − n) / (n(n − 1)).
func meanCosine(points []textembed.Vector) float64 {
	n := len(points)
	if n < 2 {
		return 0
	}
	sum := make([]float64, Dim(points))
	for _, p := range points {
		p.AddTo(sum, 1)
	}
	return (floats.Dot(sum, sum) - float64(n)) / float64(n*(n-1))
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// refine runs spherical k-means from cents; afterwards a point whose
// cosine to its centroid is below DefaultFarCos is unassigned (−1) and
// the centroids are recomputed without it.
func refine(points []textembed.Vector, cents [][]float64, maxIter int) *KMeans {
	km := lloyd(points, cents, maxIter)
	for i, p := range points {
		if 1-cosDist(p, km.Centroids[km.Assign[i]]) < DefaultFarCos {
			km.Assign[i] = -1
		}
	}
	for c := range km.Centroids {
		clear(km.Centroids[c])
	}
	km.Inertia = 0
	for i, p := range points {
		if c := km.Assign[i]; c >= 0 {
			p.AddTo(km.Centroids[c], 1)
		}
	}
	for c := range km.Centroids {
		unitize(km.Centroids[c])
	}
	for i, p := range points {
		if c := km.Assign[i]; c >= 0 {
			km.Inertia += cosDist(p, km.Centroids[c])
		}
	}
	return km
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
	clustered := 0
	for p, c := range km.Assign {
		if c < 0 {
			continue
		}
		cs[c].Members = append(cs[c].Members, index[p])
		near[c] = append(near[c], p)
		clustered++
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
		cs[c].Share = float64(cs[c].Size) / float64(clustered)
	}
	// Top terms: each cluster's own words first, against the weight of
	// every cluster.
	sums := make([]map[string]float64, len(cs))
	total := map[string]float64{}
	for c := range cs {
		sums[c] = termSums(texts, index, near[c], points, km.Centroids[c], terms)
		for t, w := range sums[c] {
			total[t] += w
		}
	}
	for c := range cs {
		if len(cs[c].Members) > 0 && terms != nil {
			cs[c].TopTerms = topTerms(sums[c], total, top)
		}
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

// termSums returns the sum of the normalised TF-IDF term weights of a
// cluster's members (point indices; index maps them to texts), each
// weighted by the square of its cosine to the cluster's centroid, so that
// the queries typical of the cluster count most and a query drawn in by
// one shared word hardly counts (nil without a model).
func termSums(texts []string, index, members []int, points []textembed.Vector, centroid []float64, terms *textembed.Model) map[string]float64 {
	if terms == nil {
		return nil
	}
	sum := map[string]float64{}
	for _, p := range members {
		cos := math.Max(0, points[p].DotDense(centroid))
		for t, w := range terms.Weights(texts[index[p]]) {
			sum[t] += cos * cos * w
		}
	}
	return sum
}

// topTerms returns the n terms that most set a cluster apart: a term
// scores its weight in the cluster (sum, see termSums) times the share of
// its weight over every cluster (total) that falls in this one, so that a
// word the cluster shares with other clusters counts for less than one of
// its own. Ties go to the term first in alphabetical order.
func topTerms(sum, total map[string]float64, n int) []string {
	score := make(map[string]float64, len(sum))
	all := make([]string, 0, len(sum))
	for t, w := range sum {
		score[t] = w
		if total[t] > 0 {
			share := w / total[t]
			score[t] = w * share * share
		}
		all = append(all, t)
	}
	sort.Slice(all, func(a, b int) bool {
		if score[all[a]] != score[all[b]] {
			return score[all[a]] > score[all[b]]
		}
		return all[a] < all[b]
	})
	return all[:min(n, len(all))]
}
