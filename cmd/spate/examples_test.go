package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/llmtest"
	"github.com/spate-dev/spate/sim"
)

// startSim serves the simulator on a loopback port until the test ends and
// returns it with its API base URL.
func startSim(t *testing.T, cfg sim.Config) (*sim.Server, string) {
	t.Helper()
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); sim.Serve(ctx, ln, srv) }()
	t.Cleanup(func() { cancel(); <-done; srv.Close() })
	return srv, "http://" + ln.Addr().String() + "/v1"
}

// TestExamplesRunAgainstSimulator runs every example experiment, shortened
// by flags, against the built-in simulator.
func TestExamplesRunAgainstSimulator(t *testing.T) {
	_, target := startSim(t, sim.Deterministic(20*time.Millisecond, 2*time.Millisecond, 0))

	files, _ := filepath.Glob("../../examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			// Each example waits on its own runs' deadlines, not on
			// the CPU, so they run side by side; validity is not this
			// test's subject (a busy machine may mark a stage invalid).
			t.Parallel()
			e, err := experiment.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "r.json")
			code, stdout, stderr := cli(t, context.Background(), "run", f, "--target", target,
				"--duration", "1s", "--requests", "4", "--warmup", "0s", "--out", out, "--quiet", "--allow-invalid")
			// Shortened to 4 requests a stage, an error-rate threshold
			// may fail on one injected error (exit 3): the run itself
			// must still complete.
			if code != 0 && code != exitThreshold {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			r := readResult(t, out)
			if len(r.Scenarios) != len(e.Stages) {
				t.Fatalf("%d scenarios, want %d", len(r.Scenarios), len(e.Stages))
			}
			for _, sc := range r.Scenarios {
				if sc.Requests.Succeeded == 0 {
					t.Errorf("stage %s: nothing succeeded: %+v", sc.Name, sc.Requests)
				}
			}
		})
	}
}

// TestStageFaults: a stage's faults are on for that stage only. The chaos
// stage fails every request: the result is written, and the run exits 1
// (a stage in which no request succeeded is an error).
func TestStageFaults(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	srv, target := startSim(t, sim.Deterministic(5*time.Millisecond, time.Millisecond, 2))

	dir := t.TempDir()
	file := filepath.Join(dir, "e.yaml")
	os.WriteFile(file, []byte(`apiVersion: spate/v1
kind: Experiment
target: {url: "`+target+`", model: m}
stages:
  - {name: before, concurrency: 2, requests: 6}
  - {name: chaos, concurrency: 2, requests: 6, faults: {url: /admin/faults, set: {error_rate: 1}}}
  - {name: after, concurrency: 2, requests: 6}
`), 0o644)
	out := filepath.Join(dir, "r.json")
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", file, "--out", out, "--quiet")
	if code != 1 || !strings.Contains(stderr, "no request succeeded in stage chaos (6 failed") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	r := readResult(t, out)
	want := map[string]int{"before": 0, "chaos": 6, "after": 0}
	for _, sc := range r.Scenarios {
		if sc.Requests.Errors["http_500"] != want[sc.Name] {
			t.Errorf("stage %s: %v errors, want %d http_500", sc.Name, sc.Requests.Errors, want[sc.Name])
		}
	}
	if f := srv.Faults(); f.ErrorRate != 0 {
		t.Errorf("faults left on after the run: %+v", f)
	}
}

// TestFailedStageKeepsTheOthers: a stage that cannot start is reported and
// the stages around it still run.
func TestFailedStageKeepsTheOthers(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Config{Tokens: 2})
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "e.yaml")
	os.WriteFile(file, []byte(`apiVersion: spate/v1
kind: Experiment
target: {url: "`+srv.BaseURL()+`", model: m}
stages:
  - {name: a, concurrency: 1, requests: 3}
  - {name: broken, concurrency: 1, requests: 3, faults: {url: "http://`+dead+`/admin/faults", set: {error_rate: 1}}}
  - {name: c, concurrency: 1, requests: 3}
`), 0o644)
	out := filepath.Join(dir, "r.json")
	code, _, stderr := cli(t, context.Background(), "run", "--allow-invalid", file, "--out", out, "--quiet")
	if code != 1 || !strings.Contains(stderr, "stage broken: setting faults") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	r := readResult(t, out)
	if len(r.Scenarios) != 2 || r.Scenarios[0].Name != "a" || r.Scenarios[1].Name != "c" || len(r.Warnings) != 1 {
		t.Fatalf("scenarios %d, warnings %v", len(r.Scenarios), r.Warnings)
	}
}

func TestStageWorkload(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Config{}) // answers max_tokens tokens
	defer srv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "e.yaml")
	os.WriteFile(file, []byte(`apiVersion: spate/v1
kind: Experiment
target: {url: "`+srv.BaseURL()+`", model: m}
workload: {inputTokens: "8", outputTokens: "3"}
stages:
  - {name: short, concurrency: 1, requests: 2}
  - {name: long, concurrency: 1, requests: 2, workload: {outputTokens: "9"}}
`), 0o644)
	out := filepath.Join(dir, "r.json")
	if code, _, stderr := cli(t, context.Background(), "run", "--allow-invalid", file, "--out", out, "--quiet"); code != 0 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	r := readResult(t, out)
	if a, b := r.Scenarios[0].Tokens.Output, r.Scenarios[1].Tokens.Output; a != 6 || b != 18 {
		t.Fatalf("output tokens %d and %d, want 6 and 18", a, b)
	}
}
