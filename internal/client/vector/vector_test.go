package vector

import (
	"context"
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/result"
)

func TestDistance(t *testing.T) {
	a, b := []float32{1, 0}, []float32{0, 2}
	for _, tc := range []struct {
		m    Metric
		want float64
	}{
		{Cosine, 1}, {L2, 5}, {Dot, 0},
	} {
		if got := tc.m.Distance(a, b); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", tc.m, got, tc.want)
		}
	}
	if got := Dot.Distance([]float32{1, 2}, []float32{3, 4}); got != -11 {
		t.Errorf("dot: %v, want -11", got)
	}
	if got := Cosine.Distance([]float32{1, 1}, []float32{2, 2}); math.Abs(got) > 1e-12 {
		t.Errorf("cosine of parallel vectors: %v, want 0", got)
	}
	if _, err := ParseMetric("hamming"); err == nil {
		t.Error("ParseMetric(hamming): no error")
	}
}

func TestRecallAt(t *testing.T) {
	truth := []int32{1, 2, 3, 4}
	for _, tc := range []struct {
		name string
		got  []int64
		k    int
		want float64
	}{
		{"all", []int64{4, 3, 2, 1}, 4, 1},
		{"half", []int64{1, 2, 9, 8}, 4, 0.5},
		{"duplicates count once", []int64{1, 1, 1, 1}, 4, 0.25},
		{"short answer", []int64{1}, 4, 0.25},
		{"none", nil, 4, 0},
		{"only first k returned count", []int64{9, 8, 1, 2}, 2, 0},
		{"k smaller than truth", []int64{2, 1}, 2, 1},
	} {
		if got := RecallAt(tc.got, truth, tc.k); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestBruteForceKnownNeighbours(t *testing.T) {
	// Points on a line at 0, 1, ..., 9; query at 2.2: nearest 2, 3, 1, 4.
	ds := &Dataset{Dim: 1, Queries: [][]float32{{2.2}, {9.9}}}
	for i := range 10 {
		ds.Vectors = append(ds.Vectors, []float32{float32(i)})
	}
	tr, err := BruteForce(ds, L2, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{{2, 3, 1, 4}, {9, 8, 7, 6}}
	for q := range want {
		for i := range want[q] {
			if tr.IDs[q][i] != want[q][i] {
				t.Fatalf("query %d: %v, want %v", q, tr.IDs[q], want[q])
			}
		}
	}
	if _, err := BruteForce(ds, L2, 11); err == nil {
		t.Error("k > n: no error")
	}
}

func TestCachedTruth(t *testing.T) {
	dir := t.TempDir()
	ds, err := Generate(GenConfig{N: 200, Queries: 5, Dim: 4, Clusters: 3, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	t1, err := CachedTruth(context.Background(), dir, ds, Cosine, 5)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "truth-*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files %v, want one", files)
	}
	// A planted cache entry is returned as it is: proof that it is read,
	// not recomputed.
	t1.IDs[0][0] = 12345
	b, err := json.Marshal(t1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	t2, err := CachedTruth(context.Background(), dir, ds, Cosine, 5)
	if err != nil {
		t.Fatal(err)
	}
	if t2.IDs[0][0] != 12345 {
		t.Errorf("cached truth was not read: first id %d", t2.IDs[0][0])
	}
	// The same entry padded past what the truth of 5 queries can be (1 MiB
	// of trailing spaces, which JSON allows) is not read whole: it is
	// computed again, and the cache file replaced.
	if err := os.WriteFile(files[0], append(b, bytes.Repeat([]byte(" "), 1<<20)...), 0o644); err != nil {
		t.Fatal(err)
	}
	if t2, err = CachedTruth(context.Background(), dir, ds, Cosine, 5); err != nil || t2.IDs[0][0] == 12345 {
		t.Fatalf("an oversized cache file: %v, first id %v: want it computed again", err, t2)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Size() > 4096 {
		t.Errorf("cache file after recomputing: %v, %v bytes", err, fi)
	}
	// Another dataset (one component changed) misses the cache.
	ds.Vectors[0][0] += 1
	t3, err := CachedTruth(context.Background(), dir, ds, Cosine, 5)
	if err != nil {
		t.Fatal(err)
	}
	if t3.IDs[0][0] == 12345 || t3.Digest == t1.Digest {
		t.Error("a changed dataset matched the old cache")
	}
	files, _ = filepath.Glob(filepath.Join(dir, "truth-*.json"))
	if len(files) != 2 {
		t.Errorf("cache files %v, want two", files)
	}
}

func TestGenerateDeterministicAndRoundTrip(t *testing.T) {
	cfg := GenConfig{N: 50, Queries: 7, Dim: 5, Clusters: 2, Seed: 9}
	a, _ := Generate(cfg)
	b, _ := Generate(cfg)
	if a.Digest() != b.Digest() {
		t.Fatal("same config, different datasets")
	}
	cfg.Seed++
	if c, _ := Generate(cfg); c.Digest() == a.Digest() {
		t.Fatal("another seed, same dataset")
	}
	path := filepath.Join(t.TempDir(), "ds.jsonl")
	if err := a.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Digest() != a.Digest() || len(back.Vectors) != 50 || len(back.Queries) != 7 {
		t.Fatalf("round trip changed the dataset: %d vectors, %d queries", len(back.Vectors), len(back.Queries))
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"vector":[1,2]}` + "\n" + `{"query":[1]}`, "line 2: 1 dimensions"},
		{`{"vector":[1,2],"query":[1,2]}`, "both vector and query"},
		{`{}`, "no vector and no query"},
		{`{"vector":[1]}`, "need at least one of each"},
		{`not json`, "line 1"},
	} {
		_, err := Parse(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to say %q", tc.in, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"vector":[1,2]}` + "\n" + `{"query":[0.5,1e3]}`))
	f.Add([]byte(`{"query":[1]}`))
	f.Add([]byte("\n\n{\"vector\":[]}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ds, err := Parse(bytes.NewReader(b))
		if err != nil {
			return
		}
		if ds.Dim == 0 || len(ds.Vectors) == 0 || len(ds.Queries) == 0 {
			t.Fatalf("accepted an empty dataset: %+v", ds)
		}
		for _, v := range append(ds.Vectors, ds.Queries...) {
			if len(v) != ds.Dim {
				t.Fatalf("vector of %d dimensions in a %d-d dataset", len(v), ds.Dim)
			}
		}
	})
}

func TestSummarizeRecall(t *testing.T) {
	// 100 queries: 90 at 1.0, then 10 at 0.5 (the last batch).
	vals := make([]float64, 100)
	for i := range vals {
		vals[i] = 1
		if i >= 90 {
			vals[i] = 0.5
		}
	}
	r, warns := SummarizeRecall(vals)
	if r.Count != 100 || math.Abs(r.Mean-0.95) > 1e-12 || r.Min != 0.5 || r.P1 != 0.5 || r.P5 != 0.5 || r.P50 != 1 {
		t.Errorf("summary %+v", r)
	}
	// Batch means: nine of 1.0 and one of 0.5:
	// mean 0.95, s = sqrt(Σ(m−0.95)²/9) = sqrt((9·0.0025+0.2025)/9) = 0.158114; se = 0.05;
	// t(0.975, 9) = 2.262157; half width 0.1131.
	if math.Abs(r.MeanLow-(0.95-2.262157*0.05)) > 1e-5 || r.MeanHigh != 1 || r.Batches != 10 {
		t.Errorf("interval [%v, %v] over %d batches, want [%.5f, 1] over 10", r.MeanLow, r.MeanHigh, r.Batches, 0.95-2.262157*0.05)
	}
	if len(warns) != 0 {
		t.Errorf("warnings %v", warns)
	}
	if r.Histogram[5] != 10 || r.Histogram[9] != 90 {
		t.Errorf("histogram %v", r.Histogram)
	}
	// P5 of 100 queries with 4 at 0.2: the 5th smallest is 1.
	vals = make([]float64, 100)
	for i := range vals {
		vals[i] = 1
	}
	for i := range 4 {
		vals[i*20] = 0.2
	}
	if r, _ := SummarizeRecall(vals); r.P1 != 0.2 || r.P5 != 1 {
		t.Errorf("p1 %v p5 %v, want 0.2 and 1", r.P1, r.P5)
	}
	if _, w := SummarizeRecall([]float64{1, 1}); len(w) == 0 {
		t.Error("two queries: no warning")
	}
}

func TestObserverAndFrontier(t *testing.T) {
	o := &Observer{Backend: "pgvector", Metric: Cosine, K: 10, Ef: map[string]int{"ef-10": 10, "ef-40": 40}}
	t0 := time.Unix(1000, 0)
	for _, stage := range []string{"ef-10", "ef-40"} {
		o.StageStart(t.Context(), runner.Stage{Name: stage}, t0)
		for i := range 20 {
			sent := t0.Add(time.Duration(i) * 100 * time.Millisecond)
			rec := &record.Record{Sent: sent, End: sent.Add(time.Duration(i+1) * time.Millisecond), Recall: 0.9}
			if stage == "ef-40" {
				rec.Recall = 1
			}
			if i == 19 && stage == "ef-10" {
				rec.Err, rec.Recall = record.Timeout, -1
			}
			o.Record(stage, rec)
		}
		o.Record(stage, &record.Record{Warmup: true, Recall: 0, Sent: t0.Add(-time.Hour), End: t0.Add(time.Hour)}) // left out
	}
	var scs []result.Scenario
	for _, stage := range []string{"ef-10", "ef-40"} {
		sc := result.Scenario{Name: stage, DurationS: 2}
		o.StageEnd(runner.Stage{Name: stage}, &sc)
		scs = append(scs, sc)
	}
	v := scs[0].Vector
	if v.Queries != 20 || v.Failed != 1 || v.Recall.Count != 19 || math.Abs(v.Recall.Mean-0.9) > 1e-12 || v.EfSearch != 10 || math.Abs(v.QueriesPerS-19/1.92) > 1e-9 {
		t.Errorf("ef-10: %+v", v)
	}
	if v.LatencyMS.Count != 19 || math.Abs(v.LatencyMS.P50-10) > 0.01 || math.Abs(v.LatencyMS.Max-19) > 0.02 {
		t.Errorf("ef-10 latency %+v, want p50 10 ms, max 19 ms", v.LatencyMS)
	}
	var buf bytes.Buffer
	if err := WriteFrontier(&buf, scs); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "frontier.golden", buf.Bytes())
}

func TestProbeRejectsForeignRequests(t *testing.T) {
	ds, _ := Generate(GenConfig{N: 20, Queries: 2, Dim: 2, Clusters: 1, Seed: 1})
	tr, _ := BruteForce(ds, L2, 5)
	if _, err := NewProbe(nil, ds, tr, 6); err == nil {
		t.Error("k above the truth's k: no error")
	}
	other, _ := Generate(GenConfig{N: 20, Queries: 2, Dim: 2, Clusters: 1, Seed: 2})
	if _, err := NewProbe(nil, other, tr, 5); err == nil {
		t.Error("truth of another dataset: no error")
	}
	p, err := NewProbe(nil, ds, tr, 5)
	if err != nil {
		t.Fatal(err)
	}
	rec := &record.Record{}
	rec.Reset()
	p.Do(t.Context(), &workload.Request{Prompt: "not a query"}, rec)
	if !rec.Failed() || rec.Recall != -1 {
		t.Errorf("foreign request: err %q recall %v", rec.Err, rec.Recall)
	}
	// The source cycles through every query, from an offset set by the seed.
	src := p.Source(7, 1)
	r0, _ := src.Request(0)
	r1, _ := src.Request(1)
	r2, _ := src.Request(2)
	if r0.Vars["vector_query"] != 1 || r1.Vars["vector_query"] != 0 || r2 != r0 || r0.Vars["ef_search"] != 7 {
		t.Errorf("source: %v %v %v", r0.Vars, r1.Vars, r2.Vars)
	}
	if p.Source(7, 1).Digest() == p.Source(8, 1).Digest() {
		t.Error("another ef, same workload digest")
	}
}

func TestChromaPrepareNeedsItsOwnLoad(t *testing.T) {
	c := NewChroma("http://127.0.0.1:1", "x")
	if err := c.PrepareEf(t.Context(), 0); err != nil {
		t.Errorf("ef 0: %v", err)
	}
	if err := c.PrepareEf(t.Context(), 16); err == nil {
		t.Error("ef 16 on a collection spate did not load: no error")
	}
	if _, err := c.Search(t.Context(), []float32{1}, 1, Exact); err == nil {
		t.Error("exact search on chroma: no error")
	}
}
