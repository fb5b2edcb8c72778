package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/llmtest"
)

func TestRunExperimentFileWithFlagOverrides(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{TTFT: 10 * time.Millisecond, ITL: 2 * time.Millisecond})
	defer srv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "e.yaml")
	os.WriteFile(file, []byte(`apiVersion: spate/v1
kind: Experiment
target: {url: "http://127.0.0.1:1/v1", model: from-file, apiKeyEnv: SPATE_TEST_KEY}
sut: {version: v9}
workload: {inputTokens: "16", outputTokens: "4"}
slo: {ttft: 1s}
stages:
  - {name: warm, rate: 50, arrival: constant, requests: 10}
  - {name: hot, concurrency: 3, requests: 12}
thresholds: ["p50(ttft) < 1s"]
measurement: {lagBound: 123ms, tokenizerSample: 1}
outputs: {result: `+filepath.Join(dir, "from-file.json")+`}
`), 0o644)
	t.Setenv("SPATE_TEST_KEY", "sk-never-written-anywhere")
	out := filepath.Join(dir, "r.json")
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", file, "--target", srv.BaseURL(), "--out", out,
		"--threshold", "error_rate < 1%", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "from-file.json")); err == nil {
		t.Error("--out did not override outputs.result")
	}
	r := readResult(t, out)
	if len(r.Scenarios) != 2 || r.Scenarios[0].Name != "warm" || r.Scenarios[1].Load.Mode != "closed" {
		t.Fatalf("scenarios %+v", r.Scenarios)
	}
	if r.Scenarios[0].Requests.Succeeded != 10 || r.Scenarios[1].Requests.Succeeded != 12 {
		t.Fatalf("requests %+v / %+v", r.Scenarios[0].Requests, r.Scenarios[1].Requests)
	}
	if lb := r.Scenarios[0].Load.LagBoundMS; lb != 123 {
		t.Errorf("measurement.lagBound: lag_bound_ms %v, want 123", lb)
	}
	if r.Scenarios[0].Tokens.DiscrepancySampled != 10 {
		t.Errorf("measurement.tokenizerSample 1: %d requests counted both ways, want 10", r.Scenarios[0].Tokens.DiscrepancySampled)
	}
	if len(r.Provenance.ExperimentSHA256) != 64 {
		t.Errorf("experiment digest %q", r.Provenance.ExperimentSHA256)
	}
	if len(r.Scenarios[1].Thresholds) != 2 || r.Provenance.SUTVersion != "v9" || r.Config.Experiment != file {
		t.Fatalf("thresholds %+v provenance %+v", r.Scenarios[1].Thresholds, r.Provenance)
	}
	raw, _ := os.ReadFile(out)
	if strings.Contains(string(raw), "never-written") {
		t.Fatal("API key leaked into the result")
	}
	// A load flag overrides every stage.
	code, _, stderr = cli(t, context.Background(), "run", "--allow-invalid", file, "--target", srv.BaseURL(), "--out", out,
		"--concurrency", "2", "--requests", "4", "--quiet")
	if code != 0 {
		t.Fatalf("override: exit %d %s", code, stderr)
	}
	for _, sc := range readResult(t, out).Scenarios {
		if sc.Load.Mode != "closed" || sc.Requests.Total != 4 {
			t.Errorf("stage %s: mode %s, %d requests; want closed and 4", sc.Name, sc.Load.Mode, sc.Requests.Total)
		}
	}
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("apiVersion: spate/v1\nkind: Experiment\nstages:\n  - name: a\n    rat: 5\n"), 0o644)
	code, stdout, stderr := cli(t, context.Background(), "validate", "../../examples/baseline-peak.yaml", "../../examples/ci-gate.yaml", bad)
	if code != 2 || !strings.Contains(stdout, "baseline-peak.yaml: ok") || !strings.Contains(stderr, "bad.yaml:5:5: unknown field \"rat\"") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	code, _, stderr = cli(t, context.Background(), "run", bad)
	if code != 2 || !strings.Contains(stderr, "bad.yaml:5:5") {
		t.Fatalf("run with a bad file: exit %d %s", code, stderr)
	}
}

func TestInitAndSchema(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "exp.yaml")
	code, stdout, stderr := cli(t, context.Background(), "init", path)
	if code != 0 || !strings.Contains(stdout, "wrote") {
		t.Fatalf("init: exit %d %s %s", code, stdout, stderr)
	}
	if code, _, stderr = cli(t, context.Background(), "init", path); code != 1 || !strings.Contains(stderr, "--force") {
		t.Fatalf("init over an existing file: exit %d %s", code, stderr)
	}
	if code, stdout, _ = cli(t, context.Background(), "validate", path); code != 0 {
		t.Fatalf("the starter file does not validate: %s", stdout)
	}
	code, stdout, _ = cli(t, context.Background(), "schema")
	var doc map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &doc) != nil || doc["$schema"] == nil {
		t.Fatalf("schema: exit %d, not a JSON Schema:\n%.200s", code, stdout)
	}
}

func TestGateActions(t *testing.T) {
	// Not a timing test: it runs beside the others. Validity is not its
	// subject, but an invalid run has no pass to act on (its gate verdict
	// is "invalid", --allow-invalid or not): one token a response, whose
	// kernel-stamped read cannot be counted late, keeps a busy machine's
	// late reads from making it so (seen: 3 tokens 1 ms apart, three
	// suites at once, verdict invalid and no action run).
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Config{TTFT: 20 * time.Millisecond, ITL: time.Millisecond, Tokens: 1})
	defer srv.Close()
	dir := t.TempDir()
	marker := filepath.Join(dir, "verdict.txt")
	file := filepath.Join(dir, "e.yaml")
	os.WriteFile(file, []byte(`apiVersion: spate/v1
kind: Experiment
target: {url: "`+srv.BaseURL()+`", model: m}
stages: [{name: s, concurrency: 2, requests: 4}]
thresholds: ["p50(ttft) < 10s"]
actions:
  pass:
    - command: ["sh", "-c", "echo promoted $SPATE_VERDICT > `+marker+`"]
  fail:
    - command: ["sh", "-c", "echo rolled back $SPATE_VERDICT > `+marker+`"]
    - command: ["false"]
`), 0o644)
	out := filepath.Join(dir, "r.json")
	code, _, stderr := cli(t, context.Background(), "run", "--allow-invalid", file, "--out", out, "--quiet")
	if b, _ := os.ReadFile(marker); code != 0 || strings.TrimSpace(string(b)) != "promoted pass" {
		t.Fatalf("pass: exit %d, marker %q, stderr %s, gate %+v", code, b, stderr, readResult(t, out).Gate)
	}
	if g := readResult(t, out).Gate; g == nil || g.Verdict != "pass" || len(g.Actions) != 1 || !g.Actions[0].OK {
		t.Fatalf("gate %+v", g)
	}
	// A failing threshold: the fail actions run, the exit code stays 3.
	code, _, stderr = cli(t, context.Background(), "run", "--allow-invalid", file, "--out", out, "--quiet", "--threshold", "p50(ttft) < 1ms")
	if b, _ := os.ReadFile(marker); code != 3 || strings.TrimSpace(string(b)) != "rolled back fail" {
		t.Fatalf("fail: exit %d, marker %q, stderr %s", code, b, stderr)
	}
	if g := readResult(t, out).Gate; g == nil || g.Verdict != "fail" || len(g.Actions) != 2 || g.Actions[1].OK {
		t.Fatalf("gate %+v", g)
	}
	if !strings.Contains(stderr, "gate: verdict fail") {
		t.Errorf("stderr does not report the actions: %s", stderr)
	}
}

// TestGateErrorOnUnreachableTarget: a target that cannot be reached at
// the start still gives a result, holding the error, and runs the error
// actions; the exit code stays 1. With and without --model (the run then
// fails while listing the server's models).
func TestGateErrorOnUnreachableTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close() // nothing listens there now
	for _, model := range []string{"m", ""} {
		dir := t.TempDir()
		marker := filepath.Join(dir, "verdict.txt")
		file := filepath.Join(dir, "e.yaml")
		os.WriteFile(file, []byte(`apiVersion: spate/v1
kind: Experiment
target: {url: "`+dead+`", model: "`+model+`"}
stages: [{name: s, concurrency: 2, requests: 4}]
actions:
  error:
    - command: ["sh", "-c", "echo $SPATE_VERDICT $SPATE_RESULT > `+marker+`"]
  pass:
    - command: ["false"]
`), 0o644)
		out := filepath.Join(dir, "r.json")
		code, _, stderr := cli(t, context.Background(), "run", file, "--out", out, "--quiet")
		b, _ := os.ReadFile(marker)
		if code != exitError || strings.TrimSpace(string(b)) != "error "+out {
			t.Fatalf("model %q: exit %d, marker %q, stderr %s", model, code, b, stderr)
		}
		r := readResult(t, out)
		if !strings.Contains(r.Error, "could not start") || len(r.Scenarios) != 0 || r.Gate == nil || r.Gate.Verdict != "error" || len(r.Gate.Actions) != 1 || !r.Gate.Actions[0].OK {
			t.Fatalf("model %q: result error %q, %d scenarios, gate %+v", model, r.Error, len(r.Scenarios), r.Gate)
		}
		t.Logf("model %q: %s", model, r.Error)
	}
}

func TestBodyTemplate(t *testing.T) {
	var bodies []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	code, _, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--api", "http", "--target", srv.URL, "--method", "POST",
		"--body", `{"id": {{.Seq}}, "user": "{{.Choice "ann" "bob"}}"}`, "--concurrency", "1", "--requests", "3",
		"--out", filepath.Join(t.TempDir(), "r.json"), "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mu.Lock() // the server's handler wrote them; TCP is no synchronisation the race detector sees
	got := append([]string(nil), bodies...)
	mu.Unlock()
	if len(got) != 3 || !strings.HasPrefix(got[2], `{"id": 2, "user": "`) {
		t.Fatalf("bodies %q", got)
	}
	code, _, stderr = cli(t, context.Background(), "run", "--allow-invalid", "--api", "http", "--target", srv.URL, "--body", `{{.Seq`, "--concurrency", "1", "--requests", "1")
	if code != 2 || !strings.Contains(stderr, "--body") {
		t.Fatalf("bad template: exit %d %s", code, stderr)
	}
}

func TestAbortOnFailExitsThree(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{TTFT: 40 * time.Millisecond, ITL: time.Millisecond, Tokens: 2})
	defer srv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "e.yaml")
	os.WriteFile(file, []byte(`apiVersion: spate/v1
kind: Experiment
target: {url: "`+srv.BaseURL()+`", model: m}
stages: [{name: s, rate: 40, duration: 30s}]
thresholds:
  - {expr: "p90(ttft) < 5ms", abortOnFail: true, delay: 1s, window: 1s}
`), 0o644)
	out := filepath.Join(dir, "r.json")
	t0 := time.Now()
	code, stdout, stderr := cli(t, context.Background(), "run", file, "--out", out)
	if code != 3 || !strings.Contains(stdout, "aborted: stage s: p90(ttft) < 5ms") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if el := time.Since(t0); el > 15*time.Second {
		t.Fatalf("took %v", el)
	}
	if r := readResult(t, out); r.Aborted == "" || r.Interrupted {
		t.Fatalf("aborted %q interrupted %v", r.Aborted, r.Interrupted)
	}
}

func TestRampFlag(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{Tokens: 1})
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := cli(t, context.Background(), "run", "--target", srv.BaseURL(), "--model", "m",
		"--rate", "60", "--ramp-from", "10", "--arrival", "constant", "--duration", "2s", "--out", out, "--quiet",
		"--allow-invalid") // the ramp's counts are the point; a busy machine may make it invalid
	if code != 0 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	sc := readResult(t, out).Scenarios[0]
	// ∫ from 10 to 60 req/s over 2 s = 70 requests; the second second
	// carries 2.5× the first's (a stall may push some of its sends into
	// the grace past it: they count with it).
	if n := sc.Requests.Total; n < 60 || n > 75 || sc.Load.RampFrom != 10 {
		t.Fatalf("%d requests (want about 70), ramp_from %v", n, sc.Load.RampFrom)
	}
	if s := sc.Series.SentPerS; len(s) < 2 || float64(sum(s[1:])) < 1.5*float64(s[0]) {
		t.Fatalf("sent per second %v: the rate did not ramp", s)
	}
	code, _, stderr = cli(t, context.Background(), "run", "--target", srv.BaseURL(), "--model", "m",
		"--concurrency", "2", "--ramp-from", "10", "--requests", "2")
	if code != 2 || !strings.Contains(stderr, "ramp") {
		t.Fatalf("ramp with concurrency: exit %d %s", code, stderr)
	}
}

func sum[T int | int64 | float64](v []T) (t T) {
	for _, x := range v {
		t += x
	}
	return t
}
