package vector

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/spate-dev/spate/result"
)

// RecallAt is recall@k: the share of the exact top-k (truth, k ids) found
// among the first k returned ids. Duplicate returned ids count once.
func RecallAt(returned []int64, truth []int32, k int) float64 {
	if k <= 0 {
		return 0
	}
	if len(returned) > k {
		returned = returned[:k]
	}
	if len(truth) > k {
		truth = truth[:k]
	}
	hit := 0
	for i, id := range returned {
		if slices.Contains(returned[:i], id) {
			continue
		}
		for _, t := range truth {
			if int64(t) == id {
				hit++
				break
			}
		}
	}
	return float64(hit) / float64(k)
}

// recallBatches is how many consecutive batches the batch-means interval
// cuts the queries into.
const recallBatches = 10

// SummarizeRecall summarises recall values given in order of completion:
// mean with a 95 % batch-means interval, min, p1, p5, p50 and a histogram
// by tenths. It returns warnings when the interval cannot be trusted.
func SummarizeRecall(vals []float64) (result.Recall, []string) {
	r := result.Recall{Count: len(vals), Histogram: make([]int, 10)}
	if len(vals) == 0 {
		return r, []string{"no query succeeded: no recall"}
	}
	var sum float64
	for _, v := range vals {
		sum += v
		r.Histogram[min(int(v*10), 9)]++
	}
	r.Mean = sum / float64(len(vals))
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	rank := func(p float64) float64 { // nearest rank
		i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
		return sorted[max(i, 0)]
	}
	r.Min, r.P1, r.P5, r.P50 = sorted[0], rank(1), rank(5), rank(50)
	r.MeanLow, r.MeanHigh = r.Mean, r.Mean
	var warns []string
	per := len(vals) / recallBatches
	if per < 1 {
		return r, []string{"fewer than 10 queries: no interval on mean recall"}
	}
	means := make([]float64, recallBatches)
	for b := range means {
		var s float64
		for _, v := range vals[b*per : (b+1)*per] {
			s += v
		}
		means[b] = s / float64(per)
	}
	var bm, ss float64
	for _, m := range means {
		bm += m
	}
	bm /= recallBatches
	for _, m := range means {
		ss += (m - bm) * (m - bm)
	}
	se := math.Sqrt(ss/(recallBatches-1)) / math.Sqrt(recallBatches)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: recallBatches - 1}.Quantile(0.975)
	r.Batches = recallBatches
	r.MeanLow, r.MeanHigh = max(r.Mean-t*se, 0), min(r.Mean+t*se, 1)
	if per < 10 {
		warns = append(warns, "fewer than 10 queries a batch: the recall interval is rough")
	}
	return r, warns
}
