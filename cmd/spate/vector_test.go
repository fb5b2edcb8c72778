package main

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/vector"
	"github.com/spate-dev/spate/internal/client/vector/qdranttest"
	"github.com/spate-dev/spate/internal/jitter"
	"github.com/spate-dev/spate/sim"
)

func TestVectorRunSweepQdrantFake(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	fake := &qdranttest.Server{Wrong: 2}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--vector", "qdrant://"+strings.TrimPrefix(srv.URL, "http://")+"/c",
		"--vector-dataset", "gen:500,16,5,50", "--vector-truth-cache", filepath.Join(dir, "truth"),
		"--ef-search", "16,-1", "--concurrency", "2", "--requests", "50", "--out", out, "--progress", "0")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	r := readResult(t, out)
	if len(r.Scenarios) != 2 || r.Scenarios[0].Name != "ef-16" || r.Scenarios[1].Name != "exact" {
		t.Fatalf("scenarios %+v", r.Scenarios)
	}
	// Two of ten ids planted wrong in indexed searches: recall 0.8; exact 1.
	for i, want := range []float64{0.8, 1} {
		v := r.Scenarios[i].Vector
		if v == nil || v.Recall.Count != 50 || math.Abs(v.Recall.Mean-want) > 1e-12 || v.K != 10 || v.Backend != "qdrant" {
			t.Errorf("stage %d: vector %+v, want recall %v over 50 queries", i, v, want)
		}
	}
	if r.Provenance.API != "vector" || r.Provenance.Model != "qdrant" {
		t.Errorf("provenance %+v", r.Provenance)
	}
	if !strings.Contains(stdout, "recall@10 mean") || !strings.Contains(stdout, "0.8000") {
		t.Errorf("no frontier in the output:\n%s", stdout)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "truth", "truth-*.json")); len(files) != 1 {
		t.Errorf("ground truth cache: %v", files)
	}
}

func TestVectorRunUsage(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--ef-search", "10", "--target", "http://127.0.0.1:1/v1"},
		{"run", "--vector", "qdrant://127.0.0.1:1/c", "--ef-search", "0"},
		{"run", "--vector", "qdrant://127.0.0.1:1/c", "--vector-metric", "hamming"},
		{"run", "--vector", "qdrant://127.0.0.1:1/c", "--workflow", "x.yaml"},
	} {
		if code, _, stderr := cli(t, context.Background(), args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr)
		}
	}
}

func TestVectorGenAndTruth(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ds.jsonl")
	if code, out, errb := cli(t, context.Background(), "vector", "gen", "300,8,3,20", "-o", file); code != 0 {
		t.Fatalf("gen: exit %d %s %s", code, out, errb)
	}
	ds, err := vector.ReadFile(file)
	if err != nil || len(ds.Vectors) != 300 || len(ds.Queries) != 20 || ds.Dim != 8 {
		t.Fatalf("dataset: %v", err)
	}
	code, out, errb := cli(t, context.Background(), "vector", "truth", "--dataset", file, "--cache", dir, "--k", "5")
	if code != 0 || !strings.Contains(out, "top-5 of 20 queries among 300 vectors") {
		t.Fatalf("truth: exit %d %s %s", code, out, errb)
	}
	// The error over a limit names the flag that raises it, and the flag
	// is there: truth and load read the dataset under --limit.
	for _, sub := range []string{"truth", "load"} {
		args := []string{"vector", sub, "--dataset", file, "--limit", "fileSize=1KiB"}
		if sub == "load" {
			args = append(args, "pgvector://127.0.0.1:1/db?table=t")
		}
		code, _, errb = cli(t, context.Background(), args...)
		if code == 0 || !strings.Contains(errb, "over the fileSize limit of ") || !strings.Contains(errb, "raise it with --limit fileSize=SIZE") {
			t.Errorf("%s --limit fileSize=1KiB: exit %d, stderr %s", sub, code, errb)
		}
	}
	if code, out, errb = cli(t, context.Background(), "vector", "truth", "--dataset", file, "--cache", dir, "--limit", "fileSize=1MiB", "--limit", "lineSize=1MiB"); code != 0 {
		t.Fatalf("truth under raised limits: exit %d %s %s", code, out, errb)
	}
	if code, _, errb = cli(t, context.Background(), "vector", "truth", "--dataset", "gen:1,2"); code != 2 || !strings.Contains(errb, "--dataset") {
		t.Errorf("truth --dataset gen:1,2: exit %d, stderr %s: want 2, naming --dataset", code, errb)
	}
}

func TestVectorDriftCmd(t *testing.T) {
	s, err := sim.New(sim.Deterministic(time.Millisecond, time.Millisecond, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	base := filepath.Join(t.TempDir(), "canaries.json")
	args := []string{"vector", "drift", "--target", srv.URL + "/v1", "--model", "spate-sim", "--baseline", base}
	code, out, errb := cli(t, context.Background(), args...)
	if code != 0 || !strings.Contains(out, "baseline of 8 canaries") {
		t.Fatalf("first run: exit %d %s %s", code, out, errb)
	}
	code, out, _ = cli(t, context.Background(), args...)
	if code != 0 || !strings.Contains(out, "max cosine 0.000000") {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	// Repeated comparisons at an interval.
	code, out, _ = cli(t, context.Background(), append(args, "--count", "2", "--every", "10ms")...)
	if code != 0 || strings.Count(out, "against the baseline") != 2 {
		t.Fatalf("--count 2: exit %d\n%s", code, out)
	}
	// Move one canary's baseline vector: the comparison now fails (exit 3).
	bl, err := vector.ReadBaseline(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	for i := range bl.Canaries[0].Vector {
		bl.Canaries[0].Vector[i] = -bl.Canaries[0].Vector[i]
	}
	if err := bl.Write(base); err != nil {
		t.Fatal(err)
	}
	code, out, _ = cli(t, context.Background(), args...)
	if code != 3 || !strings.Contains(out, "max cosine 2.000000") {
		t.Fatalf("drifted: exit %d, want 3\n%s", code, out)
	}
}

func TestWorkflowRunCmd(t *testing.T) {
	s, err := sim.New(sim.Deterministic(20*time.Millisecond, 2*time.Millisecond, 3))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	simSrv := httptest.NewServer(s)
	defer simSrv.Close()
	var searchSawKey atomic.Bool
	search := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			searchSawKey.Store(true)
		}
		time.Sleep(10 * time.Millisecond)
		_, _ = io.WriteString(w, `{"result":[{"text":"spate is a load tester"}]}`)
	}))
	defer search.Close()
	dir := t.TempDir()
	spec := `name: rag
steps:
  - name: embed
    url: "{{.Vars.target}}/embeddings"
    body: '{"model": {{json .Vars.model}}, "input": {{json .Vars.prompt}}}'
    extract: {embedding: data.0.embedding}
  - name: search
    url: "` + search.URL + `/search"
    body: '{"vector": {{json .Vars.embed.embedding}}}'
    extract: {passage: result.0.text}
  - name: generate
    url: "{{.Vars.target}}/chat/completions"
    body: '{"model": {{json .Vars.model}}, "max_tokens": 3, "messages": [{"role": "user", "content": {{json .Vars.search.passage}}}]}'
`
	wf := filepath.Join(dir, "rag.yaml")
	if err := os.WriteFile(wf, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.json")
	lateness := jitter.Start(time.Millisecond)
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", simSrv.URL+"/v1", "--api-key", "sk-secret-123",
		"--workflow", wf, "--concurrency", "2", "--requests", "20", "--input-tokens", "16", "--out", out, "--progress", "0")
	late := lateness.Stop()
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	r := readResult(t, out)
	w := r.Scenarios[0].Workflow
	if w == nil || w.Runs != 20 || w.Succeeded != 20 || len(w.Steps) != 3 {
		t.Fatalf("workflow %+v", w)
	}
	// No less than planted, and late by at most 10 ms plus the machine's
	// own timer lateness meanwhile (package jitter; medians of 20).
	hi := 10 + 2*float64(late.P90)/float64(time.Millisecond)
	for i, want := range []float64{20, 10, 24} { // embed = TTFT; search = 10 ms; generate = TTFT + 2 ITL
		if got := w.Steps[i].LatencyMS.P50; got < want-0.5 || got > want+hi {
			t.Errorf("step %s: p50 %.2f ms, want %.0f ms (+%.1f; %v)", w.Steps[i].Name, got, want, hi, late)
		}
	}
	if searchSawKey.Load() {
		t.Error("the API key was sent to the search service")
	}
	b, _ := os.ReadFile(out)
	if strings.Contains(string(b), "sk-secret-123") || strings.Contains(stdout+stderr, "sk-secret-123") {
		t.Error("the API key leaked into the result or the output")
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "workflow rag: 20 runs, 20 ok, 0 failed") {
		t.Errorf("no step table:\n%s", stdout)
	}
}
