package vector

import (
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
)

// BenchmarkObserverRecord is the cost of one query's record on the hot
// path (many goroutines): recall appended, latency into the histogram.
func BenchmarkObserverRecord(b *testing.B) {
	o := &Observer{Backend: "x", Metric: Cosine, K: 10}
	o.StageStart(b.Context(), runner.Stage{Name: "s"}, time.Now())
	t0 := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rec := &record.Record{Sent: t0, End: t0.Add(5 * time.Millisecond), Recall: 0.9}
		for pb.Next() {
			o.Record("s", rec)
		}
	})
}

func BenchmarkRecallAt(b *testing.B) {
	got := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	truth := []int32{10, 9, 8, 7, 6, 5, 4, 3, 2, 11}
	b.ReportAllocs()
	for b.Loop() {
		RecallAt(got, truth, 10)
	}
}

func BenchmarkBruteForce2000x64(b *testing.B) {
	ds, err := Generate(GenConfig{N: 2000, Queries: 100, Dim: 64, Clusters: 20, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := BruteForce(ds, Cosine, 10); err != nil {
			b.Fatal(err)
		}
	}
}
