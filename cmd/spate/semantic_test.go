package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/client/workflow"
	"github.com/spate-dev/spate/internal/jitter"
	"github.com/spate-dev/spate/sim"
)

// chatLog is a non-streaming chat server that answers "answer-<n>" to its
// n-th request and keeps every request it got.
type chatLog struct {
	mu   sync.Mutex
	reqs []chatReq
	at   []time.Time
}

type chatReq struct {
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	User      string `json:"user"`
	MaxTokens int    `json:"max_tokens"`
}

func (c *chatLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		fmt.Fprint(w, `{"data":[{"id":"m"}]}`) // reachability check, model list
		return
	}
	var req chatReq
	_ = json.NewDecoder(r.Body).Decode(&req)
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	c.at = append(c.at, time.Now())
	n := len(c.reqs)
	c.mu.Unlock()
	answer := fmt.Sprintf("answer-%d", n)
	if len(req.Messages) > 0 {
		last := req.Messages[len(req.Messages)-1].Content
		if strings.Contains(last, "capital of France") {
			answer = "Paris"
		}
	}
	fmt.Fprintf(w, `{"model":"m","choices":[{"message":{"role":"assistant","content":%q}}],"usage":{"prompt_tokens":10,"completion_tokens":2}}`, answer)
}

// TestConversationsGrowAndStick runs three-turn conversations and checks
// each later turn carries the whole history with the server's real
// answers, the same session, after the think time; and the per-turn
// breakdown.
func TestConversationsGrowAndStick(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	log := &chatLog{}
	srv := httptest.NewServer(log)
	defer srv.Close()
	dir := t.TempDir()
	wl := filepath.Join(dir, "w.yaml")
	os.WriteFile(wl, []byte("inputTokens: \"12\"\noutputTokens: \"4\"\nsystemPrompt: {text: You are terse.}\nturns: {count: \"3\", turnTokens: \"5\", think: 150ms}\n"), 0o644)
	out := filepath.Join(dir, "r.json")
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", srv.URL+"/v1", "--model", "m", "--stream=false",
		"--workload", wl, "--concurrency", "2", "--requests", "4", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.reqs) != 12 {
		t.Fatalf("%d requests, want 4 conversations × 3 turns", len(log.reqs))
	}
	bySession := map[string][]int{}
	for i, r := range log.reqs {
		bySession[r.User] = append(bySession[r.User], i)
	}
	if len(bySession) != 4 {
		t.Fatalf("%d sessions, want 4: %v", len(bySession), bySession)
	}
	for s, idx := range bySession {
		if len(idx) != 3 {
			t.Fatalf("session %s has %d turns", s, len(idx))
		}
		for k, i := range idx {
			m := log.reqs[i].Messages
			// system + (user, assistant) × k + user
			if len(m) != 2+2*k || m[0].Role != "system" || m[0].Content != "You are terse." {
				t.Fatalf("session %s turn %d: %d messages %+v", s, k+1, len(m), m)
			}
			for j := 0; j < k; j++ {
				prev := log.reqs[idx[j]]
				want := fmt.Sprintf("answer-%d", idx[j]+1)
				if m[2+2*j].Role != "assistant" || m[2+2*j].Content != want || m[1+2*j].Content != prev.Messages[len(prev.Messages)-1].Content {
					t.Fatalf("session %s turn %d: history %+v does not hold turn %d (answer %q)", s, k+1, m, j+1, want)
				}
			}
			if k > 0 {
				if gap := log.at[i].Sub(log.at[idx[k-1]]); gap < 150*time.Millisecond {
					t.Fatalf("session %s: turn %d came %v after the previous one, want ≥ the 150ms think time", s, k+1, gap)
				}
			}
		}
	}
	sc := readResult(t, out).Scenarios[0]
	for _, turn := range []string{"1", "2", "3"} {
		if g := sc.Breakdown["turn"][turn]; g.Requests.Succeeded != 4 {
			t.Errorf("turn %s: %d requests in the breakdown, want 4", turn, g.Requests.Succeeded)
		}
	}
	if sc.Requests.Total != 12 {
		t.Errorf("requests total %d, want 12 turns", sc.Requests.Total)
	}
}

// TestTraceReplay replays a timed dataset at double speed and checks
// requests were sent at their offsets.
func TestTraceReplay(t *testing.T) {
	log := &chatLog{}
	srv := httptest.NewServer(log)
	defer srv.Close()
	dir := t.TempDir()
	ds := filepath.Join(dir, "trace.jsonl")
	var b strings.Builder
	offsets := []float64{0, 100, 150, 400, 1000, 1100}
	for _, o := range offsets {
		fmt.Fprintf(&b, "{\"prompt\":\"p\",\"timestamp\":%g}\n", 5000+o*2) // recorded at half speed
	}
	os.WriteFile(ds, []byte(b.String()), 0o644)
	out, recs := filepath.Join(dir, "r.json"), filepath.Join(dir, "rec.jsonl")
	probe := jitter.Start(time.Millisecond)
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", srv.URL+"/v1", "--model", "m", "--stream=false",
		"--dataset", ds, "--arrival", "trace", "--speed", "2", "--out", out, "--records", recs, "--quiet")
	late := probe.Stop()
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	f, _ := os.Open(recs)
	defer f.Close()
	var intended, sent []float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			Seq        int     `json:"seq"`
			IntendedMS float64 `json:"intended_ms"`
			SentMS     float64 `json:"sent_ms"`
		}
		json.Unmarshal(sc.Bytes(), &l)
		intended = append(intended, l.IntendedMS)
		sent = append(sent, l.SentMS)
	}
	if len(intended) != len(offsets) {
		t.Fatalf("%d records, want %d", len(intended), len(offsets))
	}
	sort.Float64s(intended)
	sort.Float64s(sent)
	for i, o := range offsets {
		// Intended times are exact up to the run's start; sends follow
		// within a few ms on a loaded machine, plus the worst timer
		// lateness the machine showed during the run (package jitter): a
		// stall delays the one send it falls on.
		if d := intended[i] - intended[0] - o; d < -0.5 || d > 0.5 {
			t.Errorf("request %d intended at +%.1f ms, want +%g", i, intended[i]-intended[0], o)
		}
		if d, hi := sent[i]-intended[i], 25+float64(late.Max)/float64(time.Millisecond); d < 0 || d > hi {
			t.Errorf("request %d sent %.1f ms after its intended time, want at most %.1f (%v)", i, d, hi, late)
		}
	}
}

// TestChecksAndSTPS runs a two-intent workload whose checks pass for one
// intent and fail for the other, and checks the pass rates and sTPS.
func TestChecksAndSTPS(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	srv := httptest.NewServer(&chatLog{})
	defer srv.Close()
	dir := t.TempDir()
	wl := filepath.Join(dir, "w.yaml")
	os.WriteFile(wl, []byte(`intents:
  - name: capital
    weight: 1
    prompts: ["What is the capital of France?"]
    checks: [{kind: equals, value: paris}]
  - name: other
    weight: 1
    prompts: ["Say hello"]
    checks: [{kind: regex, value: "^hello"}]
`), 0o644)
	out := filepath.Join(dir, "r.json")
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", srv.URL+"/v1", "--model", "m", "--stream=false",
		"--workload", wl, "--rate", "50", "--requests", "60", "--out", out, "--quiet", "--threshold", "stps > 0")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	sc := readResult(t, out).Scenarios[0]
	capital, other := sc.Breakdown["intent"]["capital"], sc.Breakdown["intent"]["other"]
	if capital.Checks == nil || capital.Checks.PassRate != 1 || other.Checks == nil || other.Checks.PassRate != 0 {
		t.Fatalf("pass rates: capital %+v other %+v", capital.Checks, other.Checks)
	}
	// Every answer is checked. A stalled machine may miss sends (45 of
	// 60 checked, three suites at once): what was not sent is counted
	// missed, never lost.
	c := sc.Checks
	if sc.Requests.Total+sc.Load.Missed != 60 || sc.Requests.Failed != 0 || sc.Requests.Succeeded < 30 {
		t.Fatalf("requests %+v, %d missed: want 60 in all, none failed, at least 30 answered", sc.Requests, sc.Load.Missed)
	}
	if c.Checked != sc.Requests.Succeeded || c.Passed != capital.Requests.Succeeded || c.ByCheck["equals"].Passed != c.Passed || c.ByCheck["regex"].Passed != 0 {
		t.Fatalf("checks %+v of %d answers", c, sc.Requests.Succeeded)
	}
	// sTPS is passed tasks per second of the same window as requests/s
	// (every request has checks here, so both variants agree).
	within(t, "sTPS", c.STPSChecked, float64(c.Passed)/float64(sc.Requests.Succeeded)*sc.Throughput.RequestsPerS, 1e-9)
	within(t, "seed sTPS", sc.Throughput.STPS, c.STPSChecked, 1e-9)
}

// TestExampleWorkloads runs every workload file and dataset under
// examples/workloads against the simulator.
func TestExampleWorkloads(t *testing.T) {
	_, target := startSim(t, sim.Deterministic(5*time.Millisecond, time.Millisecond, 0))
	files, _ := filepath.Glob("../../examples/workloads/*")
	if len(files) < 7 {
		t.Fatalf("%d example workloads, want the 7 documented", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			// Each workload's run waits on the simulator, not on the
			// CPU, so they run side by side; validity is not this
			// test's subject.
			t.Parallel()
			args := []string{"run", "--target", target, "--model", "spate-sim", "--quiet", "--allow-invalid", "--out", filepath.Join(t.TempDir(), "r.json")}
			switch filepath.Ext(f) {
			case ".yaml":
				// A deadline too, so that conversations' think times do not
				// stretch the test: no new turn starts after it.
				args = append(args, "--workload", f, "--concurrency", "4", "--requests", "8", "--duration", "2s")
			case ".jsonl", ".json", ".csv":
				args = append(args, "--dataset", f, "--concurrency", "2", "--requests", "4")
				if strings.Contains(f, "trace") {
					args = append(args[:len(args)-4], "--arrival", "trace", "--speed", "20")
				}
			default:
				t.Fatalf("unexpected file %s", f)
			}
			code, stdout, stderr := cli(t, context.Background(), args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
		})
	}
}

// TestTokenizerChoice runs with the Llama 3 tokenizer: the result names it,
// and local counts use it (the server reports no usage here).
func TestTokenizerChoice(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
			return
		}
		// "1234567" is 3 Llama 3 tokens (and 3 cl100k ones); "日本語のテキスト" is 6 in Llama 3.
		fmt.Fprint(w, `{"model":"m","choices":[{"message":{"role":"assistant","content":"日本語のテキスト"}}]}`)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", srv.URL+"/v1", "--model", "m", "--stream=false",
		"--tokenizer", "llama3", "--concurrency", "1", "--requests", "2", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	r := readResult(t, out)
	sc := r.Scenarios[0]
	if r.Provenance.Tokenizer != "llama3" || sc.Tokens.Tokenizer != "llama3" || sc.Tokens.OutputSource != "tokenizer" || sc.Tokens.Output != 12 {
		t.Fatalf("tokenizer %q/%q, output %d from %s; want llama3 and 2 × 6 tokens", r.Provenance.Tokenizer, sc.Tokens.Tokenizer, sc.Tokens.Output, sc.Tokens.OutputSource)
	}
	code, _, stderr = cli(t, context.Background(), "run", "--allow-invalid", "--target", srv.URL+"/v1", "--tokenizer", "gpt9", "--requests", "1", "--concurrency", "1")
	if code != 2 || !strings.Contains(stderr, "--tokenizer") {
		t.Fatalf("unknown tokenizer: exit %d, %s", code, stderr)
	}
}

// TestExampleWorkflowAgainstSimulator runs the example workflow that needs
// nothing but the simulator, and checks its steps' figures.
func TestExampleWorkflowAgainstSimulator(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	_, target := startSim(t, sim.Deterministic(5*time.Millisecond, time.Millisecond, 0))
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", target, "--model", "spate-sim",
		"--workflow", "../../examples/workflows/embed-then-answer.yaml", "--concurrency", "2", "--requests", "6", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	w := readResult(t, out).Scenarios[0].Workflow
	if w == nil || w.Succeeded != 6 || len(w.Steps) != 2 || w.Steps[0].Name != "embed" || w.Steps[1].Runs != 6 {
		t.Fatalf("workflow section %+v", w)
	}
}

// TestExampleFilesParse checks the examples that need a server this test
// cannot start (a vector database, Chroma) at least parse.
func TestExampleFilesParse(t *testing.T) {
	if _, err := experiment.Load("../../examples/vector/ef-sweep.yaml"); err != nil {
		t.Error(err)
	}
	files, _ := filepath.Glob("../../examples/workflows/*.yaml")
	if len(files) < 2 {
		t.Fatalf("%d example workflows", len(files))
	}
	for _, f := range files {
		if _, err := workflow.ReadFile(context.Background(), f); err != nil {
			t.Error(err)
		}
	}
}
