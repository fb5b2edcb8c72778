// Package vector measures vector search: it loads a dataset of vectors
// into a vector database (pgvector, Chroma, Qdrant), computes the exact
// top-k of every query by brute force, and drives searches through the
// engine like any target, recording each query's recall@k beside its
// latency (docs/design.md §3: recall@k = |returned ∩ exact top-k| / k).
//
// Stage: client (a vector database as the target), with recall figures for
// metrics.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package vector

import (
	"fmt"
	"math"
)

// Metric is a distance between vectors. Smaller is nearer for every
// metric: dot is the negated inner product.
type Metric string

// The metrics spate knows.
const (
	Cosine Metric = "cosine"
	L2     Metric = "l2"
	Dot    Metric = "dot"
)

// ParseMetric reads a metric name.
func ParseMetric(s string) (Metric, error) {
	switch m := Metric(s); m {
	case Cosine, L2, Dot:
		return m, nil
	case "":
		return Cosine, nil
	}
	return "", fmt.Errorf("unknown metric %q: use cosine, l2 or dot", s)
}

// Distance returns the distance between a and b (same length) under m.
func (m Metric) Distance(a, b []float32) float64 {
	switch m {
	case L2:
		var s float64
		for i := range a {
			d := float64(a[i]) - float64(b[i])
			s += d * d
		}
		return s // squared: the same order as L2, cheaper
	case Dot:
		return -dot(a, b)
	default:
		na, nb := norm(a), norm(b)
		if na == 0 || nb == 0 {
			return 1
		}
		return 1 - dot(a, b)/(na*nb)
	}
}

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func norm(a []float32) float64 { return math.Sqrt(dot(a, a)) }
