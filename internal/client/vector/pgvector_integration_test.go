//go:build integration

package vector

import (
	"context"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/result"
)

// plantedData is the integration tests' dataset: 2000 64-d vectors in 20
// clusters, 100 queries drawn from the same clusters.
func plantedData(t *testing.T) *Dataset {
	t.Helper()
	ds, err := Generate(GenConfig{N: 2000, Queries: 100, Dim: 64, Clusters: 20, Spread: 0.1, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// independentRecall computes recall@k of ids against the exact top-k by
// its own brute force (a sort of all distances per query) and set
// intersection: a second computation that shares no code with RecallAt
// and BruteForce beyond the distance.
func independentRecall(ds *Dataset, m Metric, q []float32, ids []int64, k int) float64 {
	type c struct {
		d  float64
		id int
	}
	all := make([]c, len(ds.Vectors))
	for i, v := range ds.Vectors {
		all[i] = c{m.Distance(q, v), i}
	}
	sort.Slice(all, func(a, b int) bool {
		if all[a].d != all[b].d {
			return all[a].d < all[b].d
		}
		return all[a].id < all[b].id
	})
	want := map[int64]bool{}
	for _, x := range all[:k] {
		want[int64(x.id)] = true
	}
	got := map[int64]bool{}
	for _, id := range ids[:min(k, len(ids))] {
		if want[id] {
			got[id] = true
		}
	}
	return float64(len(got)) / float64(k)
}

// recordingIndex passes searches to an Index and keeps what each
// returned, so a test can recompute recall from the very ids the run saw.
type recordingIndex struct {
	Index
	ds    *Dataset
	mu    sync.Mutex
	calls []searchCall
}

type searchCall struct {
	ef, query int
	ids       []int64
}

func (r *recordingIndex) Search(ctx context.Context, q []float32, k, ef int) ([]int64, error) {
	ids, err := r.Index.Search(ctx, q, k, ef)
	if err == nil {
		qi := slices.IndexFunc(r.ds.Queries, func(v []float32) bool { return &v[0] == &q[0] })
		r.mu.Lock()
		r.calls = append(r.calls, searchCall{ef, qi, slices.Clone(ids)})
		r.mu.Unlock()
	}
	return ids, err
}

func (r *recordingIndex) PrepareEf(ctx context.Context, ef int) error {
	if e, ok := r.Index.(EfPreparer); ok {
		return e.PrepareEf(ctx, ef)
	}
	return nil
}

// runSweep runs one closed-loop stage per ef, each asking every query
// exactly once, and returns the scenarios and the searches made.
func runSweep(t *testing.T, idx Index, ds *Dataset, m Metric, efs []int) ([]result.Scenario, []searchCall) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	truth, err := CachedTruth(context.Background(), t.TempDir(), ds, m, 10)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingIndex{Index: idx, ds: ds}
	probe, err := NewProbe(rec, ds, truth, 10)
	if err != nil {
		t.Fatal(err)
	}
	obs := &Observer{Backend: idx.Backend(), Metric: m, K: 10, Ef: map[string]int{}, Probe: probe}
	p := runner.Plan{Client: probe, Source: probe.Source(0, 0), Observers: []runner.Observer{obs}}
	for _, ef := range efs {
		name := efStageName(ef)
		obs.Ef[name] = ef
		p.Stages = append(p.Stages, runner.Stage{Name: name, Concurrency: 4, Requests: len(ds.Queries), Source: probe.Source(ef, 0)})
	}
	res, err := runner.Run(ctx, p)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(res.Scenarios) != len(efs) {
		t.Fatalf("%d scenarios, want %d", len(res.Scenarios), len(efs))
	}
	return res.Scenarios, rec.calls
}

func efStageName(ef int) string {
	if ef == Exact {
		return "exact"
	}
	return "ef-" + strconv.Itoa(ef)
}

// checkAgainstIndependent checks that each stage's mean recall equals the
// mean of recalls computed independently from the ids its searches
// returned, that every query was asked once, and that latency is there.
func checkAgainstIndependent(t *testing.T, ds *Dataset, m Metric, scs []result.Scenario, calls []searchCall) map[int]float64 {
	t.Helper()
	means := map[int]float64{}
	for _, sc := range scs {
		v := sc.Vector
		if v == nil {
			t.Fatalf("stage %s: no vector section", sc.Name)
		}
		if v.Queries != len(ds.Queries) || v.Failed != 0 || v.Recall.Count != len(ds.Queries) {
			t.Fatalf("stage %s: %d queries, %d failed (%v), %d recalls; want %d, 0, %d", sc.Name, v.Queries, v.Failed, sc.Requests.ErrorSamples, v.Recall.Count, len(ds.Queries), len(ds.Queries))
		}
		var sum float64
		asked := map[int]bool{}
		for _, c := range calls {
			if c.ef == v.EfSearch {
				sum += independentRecall(ds, m, ds.Queries[c.query], c.ids, 10)
				asked[c.query] = true
			}
		}
		if len(asked) != len(ds.Queries) {
			t.Fatalf("stage %s: %d distinct queries asked, want %d", sc.Name, len(asked), len(ds.Queries))
		}
		want := sum / float64(len(ds.Queries))
		if math.Abs(v.Recall.Mean-want) > 1e-9 {
			t.Errorf("stage %s: measured recall@10 %.6f, independently computed %.6f", sc.Name, v.Recall.Mean, want)
		}
		if v.LatencyMS.Count != int64(len(ds.Queries)) || v.LatencyMS.P50 <= 0 || v.LatencyMS.P99 < v.LatencyMS.P50 || v.LatencyMS.P999 < v.LatencyMS.P99 {
			t.Errorf("stage %s: latency %+v: want %d queries, 0 < p50 <= p99 <= p99.9", sc.Name, v.LatencyMS, len(ds.Queries))
		}
		if v.QueriesPerS <= 0 {
			t.Errorf("stage %s: queries/s %v", sc.Name, v.QueriesPerS)
		}
		if v.Recall.MeanLow > v.Recall.Mean || v.Recall.MeanHigh < v.Recall.Mean {
			t.Errorf("stage %s: interval [%v, %v] does not hold mean %v", sc.Name, v.Recall.MeanLow, v.Recall.MeanHigh, v.Recall.Mean)
		}
		means[v.EfSearch] = v.Recall.Mean
		t.Logf("stage %s: recall@10 mean %.4f [%.4f, %.4f] p5 %.2f p1 %.2f, latency p50 %.2f ms p99 %.2f ms, %.1f q/s",
			sc.Name, v.Recall.Mean, v.Recall.MeanLow, v.Recall.MeanHigh, v.Recall.P5, v.Recall.P1, v.LatencyMS.P50, v.LatencyMS.P99, v.QueriesPerS)
	}
	return means
}

func TestPgvectorIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PGlite server")
	}
	dsn := startPglite(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	idx, err := OpenPgvector(ctx, dsn, "spate_it", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	ds := plantedData(t)
	if err := idx.Load(ctx, ds, Cosine); err != nil {
		t.Fatal(err)
	}
	scs, calls := runSweep(t, idx, ds, Cosine, []int{1, 10, 100, Exact})
	means := checkAgainstIndependent(t, ds, Cosine, scs, calls)
	if means[Exact] != 1 {
		t.Errorf("exact search: recall@10 %v, want 1", means[Exact])
	}
	// pgvector's HNSW scan returns at most ef_search rows: with ef 1, one
	// row of the ten asked for, so recall@10 is at most 0.1.
	if r := means[1]; r > 0.1 || r < 0.05 {
		t.Errorf("ef_search 1: recall@10 %v, want in [0.05, 0.1]", r)
	}
	if !(means[1] < means[10] && means[10] <= means[100] && means[100] <= means[Exact]) {
		t.Errorf("recall does not rise with ef_search: %v", means)
	}
	if r := means[10]; r >= 1 || r < 0.5 {
		t.Errorf("ef_search 10: recall@10 %v, want in [0.5, 1)", r)
	}
}
