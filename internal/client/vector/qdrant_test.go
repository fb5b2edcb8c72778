package vector_test

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/vector"
	"github.com/spate-dev/spate/internal/client/vector/qdranttest"
	"github.com/spate-dev/spate/internal/jitter"
	"github.com/spate-dev/spate/internal/runner"
)

func TestQdrantAgainstFake(t *testing.T) {
	fake := &qdranttest.Server{Wrong: 3, Delay: 20 * time.Millisecond}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	ctx := context.Background()
	idx, err := vector.Open(ctx, "qdrant://"+strings.TrimPrefix(srv.URL, "http://")+"/spate_test")
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	ds, err := vector.Generate(vector.GenConfig{N: 300, Queries: 40, Dim: 8, Clusters: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Load(ctx, ds, vector.Cosine); err != nil {
		t.Fatal(err)
	}
	if n, dist := fake.Points(); n != 300 || dist != "Cosine" {
		t.Fatalf("fake holds %d points, distance %q", n, dist)
	}
	truth, err := vector.BruteForce(ds, vector.Cosine, 10)
	if err != nil {
		t.Fatal(err)
	}
	probe, err := vector.NewProbe(idx, ds, truth, 10)
	if err != nil {
		t.Fatal(err)
	}
	// The medians on the best of a few runs (package jitter): a stall of a
	// busy machine falls in one run, a wrong latency in all.
	efs0, exact0 := fake.Searches()
	jitter.BestOf(t, func() []string {
		efs0, exact0 = fake.Searches()
		obs := &vector.Observer{Backend: idx.Backend(), Metric: vector.Cosine, K: 10, Ef: map[string]int{"ef-64": 64, "exact": vector.Exact, "open-100": 64}}
		lateness := jitter.Start(time.Millisecond)
		res, err := runner.Run(ctx, runner.Plan{
			Client: probe, Source: probe.Source(0, 0), Observers: []runner.Observer{obs},
			Stages: []runner.Stage{
				{Name: "ef-64", Concurrency: 4, Requests: 40, Source: probe.Source(64, 0)},
				{Name: "exact", Concurrency: 4, Requests: 40, Source: probe.Source(vector.Exact, 0)},
				// Open loop: 100 queries/s on schedule, whatever the server does.
				{Name: "open-100", Arrival: "constant", Rate: 100, Requests: 40, Source: probe.Source(64, 0)},
			},
		})
		late := lateness.Stop()
		if err != nil {
			t.Fatal(err)
		}
		// Three of ten ids planted wrong: recall@10 is exactly 0.7 for every query.
		want := map[string]float64{"ef-64": 0.7, "exact": 1, "open-100": 0.7}
		if len(res.Scenarios) != 3 {
			t.Fatalf("%d scenarios", len(res.Scenarios))
		}
		var problems []string
		for _, sc := range res.Scenarios {
			v := sc.Vector
			if math.Abs(v.Recall.Mean-want[sc.Name]) > 1e-12 || v.Recall.P1 != want[sc.Name] || v.Recall.Min != want[sc.Name] {
				t.Errorf("stage %s: recall %+v, want all %v", sc.Name, v.Recall, want[sc.Name])
			}
			if v.Recall.Count != 40 {
				t.Errorf("stage %s: %d recalls, want 40", sc.Name, v.Recall.Count)
			}
			// Every search was delayed 20 ms by the fake: the median is no
			// less, and late by at most 20 ms plus the machine's own timer
			// lateness meanwhile (package jitter; a median of 40 searches).
			if hi := 40 + 2*float64(late.P90)/float64(time.Millisecond); v.LatencyMS.P50 < 20 || v.LatencyMS.P50 > hi {
				problems = append(problems, fmt.Sprintf("stage %s: latency p50 %.2f ms, want 20 ms (the planted delay) to %.1f ms (%v)", sc.Name, v.LatencyMS.P50, hi, late))
			}
		}
		return problems
	})
	// The last round's searches.
	efs, exact := fake.Searches()
	if exact-exact0 != 40 {
		t.Errorf("fake saw %d exact searches, want 40", exact-exact0)
	}
	for _, ef := range efs[len(efs0):][:40] {
		if ef != 64 {
			t.Fatalf("hnsw_ef sent %v, want 64", ef)
		}
	}
}
