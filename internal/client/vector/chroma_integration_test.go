//go:build integration

package vector

import (
	"context"
	"testing"
	"time"
)

func TestChromaIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Chroma server")
	}
	base := startChroma(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	idx := NewChroma(base, "spate-it")
	defer idx.Close()
	ds := plantedData(t)
	if err := idx.Load(ctx, ds, L2); err != nil {
		t.Fatal(err)
	}
	// Chroma's HNSW (hnswlib) searches with max(ef_search, k): ef 10 is
	// its narrowest search for k = 10.
	scs, calls := runSweep(t, idx, ds, L2, []int{10, 200})
	means := checkAgainstIndependent(t, ds, L2, scs, calls)
	if r := means[200]; r < 0.99 {
		t.Errorf("ef_search 200: recall@10 %v, want >= 0.99", r)
	}
	if r := means[10]; r >= means[200] || r < 0.8 {
		t.Errorf("ef_search 10: recall@10 %v, want in [0.8, %v)", r, means[200])
	}
	if _, err := idx.Search(ctx, ds.Queries[0], 10, Exact); err == nil {
		t.Error("exact search on chroma: no error")
	}
}
