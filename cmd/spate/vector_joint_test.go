package main

import (
	"context"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spate-dev/spate/internal/client/vector/qdranttest"
)

// TestVectorJointTopKAndProxy runs two stages against a Qdrant stand-in
// whose indexed answers have their last two ids planted wrong, through the
// chaos proxy (--vector-proxy): a stage asking for the top 3 (recall@3 is
// 1/3, the nearest neighbour still first: hit rate 1) and a stage asking
// for the top 10 whose faults delay every search by 30 ms at the proxy
// (recall 0.8). The joint figures, the per-stage k, the proxy's latency
// and the provenance (the database, not the proxy) are checked.
func TestVectorJointTopKAndProxy(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	fake := &qdranttest.Server{Wrong: 2}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := t.TempDir()
	db := "qdrant://" + strings.TrimPrefix(srv.URL, "http://") + "/c"
	exp := filepath.Join(dir, "x.yaml")
	if err := os.WriteFile(exp, []byte(`apiVersion: spate/v1
kind: Experiment
vector: {url: "`+db+`", dataset: "gen:400,8,4,40", k: 10, proxy: true, truthCache: "`+filepath.Join(dir, "truth")+`"}
stages:
  - {name: top3, concurrency: 2, requests: 80, topK: 3}
  - name: slow
    concurrency: 2
    requests: 80
    faults: {url: /admin/faults, set: {latency: "fixed:30ms"}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.json")
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", exp, "--out", out, "--progress", "0")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	r := readResult(t, out)
	if len(r.Scenarios) != 2 || r.Provenance.Target != db {
		t.Fatalf("%d scenarios, provenance target %q (want the database %s)", len(r.Scenarios), r.Provenance.Target, db)
	}
	top3, slow := r.Scenarios[0].Vector, r.Scenarios[1].Vector
	if top3 == nil || slow == nil {
		t.Fatalf("no vector figures: %+v", r.Scenarios)
	}
	if top3.K != 3 || math.Abs(top3.Recall.Mean-1.0/3) > 1e-9 || top3.HitRate != 1 {
		t.Errorf("top3: k %d recall %v hit rate %v; want 3, 1/3, 1", top3.K, top3.Recall.Mean, top3.HitRate)
	}
	if slow.K != 10 || math.Abs(slow.Recall.Mean-0.8) > 1e-9 || slow.HitRate != 1 {
		t.Errorf("slow: k %d recall %v hit rate %v; want 10, 0.8, 1", slow.K, slow.Recall.Mean, slow.HitRate)
	}
	// The proxy's 30 ms: every search of the slow stage takes at least
	// that long; the first stage's went through the same proxy without it.
	if slow.LatencyMS.Min < 30 || top3.LatencyMS.P50 >= slow.LatencyMS.P50 {
		t.Errorf("latency: top3 p50 %.2f ms, slow min %.2f p50 %.2f ms; want slow ≥ 30 ms", top3.LatencyMS.P50, slow.LatencyMS.Min, slow.LatencyMS.P50)
	}
	if r.Scenarios[1].Chaos == nil {
		t.Error("no chaos figures from the proxy")
	}
	// Joint figures: five latency bands holding every query, recall levels.
	n := 0
	for _, b := range slow.ByLatency {
		n += b.Queries
		if b.Queries > 0 && (b.HitRate != 1 || math.Abs(b.MeanRecall-0.8) > 1e-9) {
			t.Errorf("band %+v", b)
		}
	}
	if len(slow.ByLatency) != 5 || n != 80 {
		t.Errorf("bands %+v", slow.ByLatency)
	}
	lv := map[string]int{}
	for _, l := range top3.ByRecall {
		lv[l.Level] = l.Queries
	}
	if lv["recall < 0.92"] != 80 || lv["recall = 1"] != 0 {
		t.Errorf("recall levels of top3 %v", lv)
	}
	if !strings.Contains(stdout, "top3: top_k 3, hit rate 1.0000") || !strings.Contains(stdout, "p99.9-max") || !strings.Contains(stdout, "recall@k mean") {
		t.Errorf("no joint table in the output:\n%s", stdout)
	}
}

func TestVectorProxyNeedsHTTP(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--vector", "pgvector://u:p@127.0.0.1:1/db", "--vector-proxy", "--rate", "1", "--duration", "1s"},
		{"run", "--vector-proxy", "--target", "http://127.0.0.1:1/v1", "--rate", "1", "--duration", "1s"},
	} {
		if code, _, stderr := cli(t, context.Background(), args...); code != 2 || !strings.Contains(stderr, "--vector-proxy") {
			t.Errorf("%v: exit %d (%s)", args, code, stderr)
		}
	}
}
