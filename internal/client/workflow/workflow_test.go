package workflow

import (
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/jitter"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/result"
	"github.com/spate-dev/spate/sim"
)

// Planted delays: the simulator answers embeddings after simTTFT and a
// chat completion of ragTokens tokens after simTTFT + (ragTokens−1)·simITL;
// the fake search answers after searchDelay.
const (
	simTTFT     = 30 * time.Millisecond
	simITL      = 5 * time.Millisecond
	ragTokens   = 5
	searchDelay = 20 * time.Millisecond
)

// ragSpec is embed → search → generate against the simulator and a fake
// search service, with values passed from step to step.
const ragSpec = `
name: rag
steps:
  - name: embed
    url: "{{.Vars.target}}/embeddings"
    body: '{"model": "spate-sim", "input": {{json .Vars.prompt}}, "dimensions": 8}'
    extract: {embedding: data.0.embedding}
  - name: search
    url: "{{.Vars.search}}/search"
    body: '{"vector": {{json .Vars.embed.embedding}}, "limit": 2}'
    extract: {passage: result.0.text}
  - name: generate
    url: "{{.Vars.target}}/chat/completions"
    body: '{"model": "spate-sim", "max_tokens": 5, "stream": false, "messages": [{"role": "user", "content": {{json (print "Context: " .Vars.search.passage "\nQuestion: " .Vars.prompt)}}}]}'
    extract: {answer: choices.0.message.content}
`

// fakeSearch answers /search after searchDelay with passages naming the
// vector's length; every failEvery-th request (0: none) fails with 500.
type fakeSearch struct {
	failEvery int64
	n         atomic.Int64
	badDim    atomic.Int64
}

func (f *fakeSearch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Vector []float64 `json:"vector"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Vector) != 8 {
		f.badDim.Add(1)
	}
	time.Sleep(searchDelay)
	if n := f.n.Add(1); f.failEvery > 0 && n%f.failEvery == 0 {
		http.Error(w, `{"error":"index unavailable"}`, http.StatusInternalServerError)
		return
	}
	_, _ = io.WriteString(w, `{"result": [{"id": 1, "text": "passage-of-`+itoa(len(body.Vector))+`-dims"}, {"id": 2, "text": "other"}]}`)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// chatSpy wraps the simulator and keeps the chat requests' bodies.
type chatSpy struct {
	h      http.Handler
	mu     sync.Mutex
	bodies []string
}

func (c *chatSpy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/chat/completions") {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.bodies = append(c.bodies, string(b))
		c.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(b)))
	}
	c.h.ServeHTTP(w, r)
}

func startRAG(t *testing.T, failEvery int64) (*Workflow, *fakeSearch, *chatSpy) {
	t.Helper()
	s, err := sim.New(sim.Deterministic(simTTFT, simITL, ragTokens))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	spy := &chatSpy{h: s}
	simSrv := httptest.NewServer(spy)
	t.Cleanup(simSrv.Close)
	fs := &fakeSearch{failEvery: failEvery}
	searchSrv := httptest.NewServer(fs)
	t.Cleanup(searchSrv.Close)
	spec, err := Parse([]byte(ragSpec))
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(spec, Config{Vars: map[string]any{"target": simSrv.URL + "/v1", "search": searchSrv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	return w, fs, spy
}

// runRAG runs the workflow n times, concurrency at a time.
func runRAG(t *testing.T, w *Workflow, n, concurrency int) *result.Scenario {
	t.Helper()
	obs := NewObserver(w)
	src := workload.SourceFunc{F: func(i uint64) (*workload.Request, error) {
		return &workload.Request{Prompt: "what is spate?"}, nil
	}, Sha256: "rag"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Plan{
		Client: w, Source: src, Observers: []runner.Observer{obs},
		Stages: []runner.Stage{{Name: "rag", Concurrency: concurrency, Requests: n}},
	})
	if err != nil && !strings.Contains(err.Error(), "no request") {
		t.Fatalf("run: %v", err)
	}
	if len(res.Scenarios) != 1 || res.Scenarios[0].Workflow == nil {
		t.Fatalf("no workflow section: %+v", res.Scenarios)
	}
	return &res.Scenarios[0]
}

// latencyProblem checks a step's median latency against its planted delay:
// no less, and at most tol more (a loaded 2-core machine adds scheduling).
func latencyProblem(what string, got float64, planted, tol time.Duration) []string {
	p := float64(planted) / float64(time.Millisecond)
	if got < p-0.5 || got > p+float64(tol)/float64(time.Millisecond) {
		return []string{fmt.Sprintf("%s: p50 %.2f ms, want %.0f ms (+%v)", what, got, p, tol)}
	}
	return nil
}

func TestRAGStepTimings(t *testing.T) {
	// The medians are judged on the best of a few rounds (a fresh set of
	// servers each), widened by the timer lateness the machine showed
	// meanwhile (package jitter): a stall falls in one round, a step
	// timed wrong in all.
	var (
		fs  *fakeSearch
		spy *chatSpy
		sc  *result.Scenario
	)
	jitter.BestOf(t, func() []string {
		var w *Workflow
		w, fs, spy = startRAG(t, 0)
		probe := jitter.Start(time.Millisecond)
		sc = runRAG(t, w, 30, 2)
		late := probe.Stop()
		wf := sc.Workflow
		if wf.Runs != 30 || wf.Succeeded != 30 || wf.Failed != 0 || len(wf.Steps) != 3 {
			t.Fatalf("workflow %+v", wf)
		}
		t.Logf("p50 embed %.2f search %.2f generate %.2f workflow %.2f ms; %v", wf.Steps[0].LatencyMS.P50, wf.Steps[1].LatencyMS.P50, wf.Steps[2].LatencyMS.P50, wf.E2EMS.P50, late)
		tol := late.Widen(8*time.Millisecond, 2)
		var problems []string
		problems = append(problems, latencyProblem("embed", wf.Steps[0].LatencyMS.P50, simTTFT, tol)...)
		problems = append(problems, latencyProblem("search", wf.Steps[1].LatencyMS.P50, searchDelay, tol)...)
		problems = append(problems, latencyProblem("generate", wf.Steps[2].LatencyMS.P50, simTTFT+(ragTokens-1)*simITL, tol)...)
		problems = append(problems, latencyProblem("workflow", wf.E2EMS.P50, simTTFT+searchDelay+simTTFT+(ragTokens-1)*simITL, 3*tol)...)
		return problems
	})
	if t.Failed() {
		return
	}
	wf := sc.Workflow
	for i, s := range wf.Steps {
		if s.Runs != 30 || s.Failed != 0 || s.LatencyMS.Count != 30 {
			t.Errorf("step %d: %+v", i, s)
		}
	}
	// Values flowed: the search saw 8-d embeddings, the chat the passage.
	if n := fs.badDim.Load(); n != 0 {
		t.Errorf("%d searches did not get the 8-d embedding", n)
	}
	spy.mu.Lock()
	defer spy.mu.Unlock()
	if len(spy.bodies) != 30 || !strings.Contains(spy.bodies[0], `Context: passage-of-8-dims\nQuestion: what is spate?`) {
		t.Errorf("%d chat bodies, first %q", len(spy.bodies), spy.bodies)
	}
	if sc.Requests.Succeeded != 30 {
		t.Errorf("scenario: %d succeeded", sc.Requests.Succeeded)
	}
}

func TestRAGErrorPropagation(t *testing.T) {
	// Every third search fails, whatever the order: the counts are
	// judged, not the timings, so ten runs go at once.
	w, _, spy := startRAG(t, 3)
	sc := runRAG(t, w, 30, 10)
	wf := sc.Workflow
	if wf.Runs != 30 || wf.Failed != 10 || wf.Succeeded != 20 || wf.FailedAt["search"] != 10 {
		t.Fatalf("workflow %+v", wf)
	}
	want := []struct{ runs, failed int }{{30, 0}, {30, 10}, {20, 0}}
	for i, s := range wf.Steps {
		if s.Runs != want[i].runs || s.Failed != want[i].failed {
			t.Errorf("step %s: %d runs, %d failed; want %d, %d", s.Name, s.Runs, s.Failed, want[i].runs, want[i].failed)
		}
	}
	if wf.Steps[1].Errors["http_500"] != 10 {
		t.Errorf("search errors %v, want 10 http_500", wf.Steps[1].Errors)
	}
	if sc.Requests.Failed != 10 || !strings.Contains(sc.Requests.ErrorSamples["http_500"], "step search: HTTP 500") {
		t.Errorf("scenario requests %+v", sc.Requests)
	}
	spy.mu.Lock()
	defer spy.mu.Unlock()
	if len(spy.bodies) != 20 {
		t.Errorf("generate ran %d times, want 20 (not after a failed search)", len(spy.bodies))
	}
}

func TestStepsInRecord(t *testing.T) {
	w, _, _ := startRAG(t, 0)
	rec := &record.Record{}
	rec.Reset()
	rec.Sent = time.Now()
	w.Do(context.Background(), &workload.Request{Prompt: "p"}, rec)
	if rec.Failed() || len(rec.Steps) != 3 {
		t.Fatalf("record: err %q %s, %d steps", rec.Err, rec.ErrMsg, len(rec.Steps))
	}
	for i := 1; i < 3; i++ {
		if rec.Steps[i].Start.Before(rec.Steps[i-1].End) {
			t.Errorf("step %d started before step %d ended", i, i-1)
		}
	}
	if rec.End.Before(rec.Steps[2].End) {
		t.Error("record ends before its last step")
	}
	if len(rec.Answer) != 0 {
		t.Errorf("answer kept without KeepAnswer: %q", rec.Answer)
	}
	rec.Reset()
	rec.Sent = time.Now()
	w.Do(context.Background(), &workload.Request{Prompt: "p", KeepAnswer: true}, rec)
	if !strings.Contains(string(rec.Answer), `"chat.completion"`) {
		t.Errorf("kept answer %q, want the generate step's response", rec.Answer)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`name: x`, "no steps"},
		{"steps:\n  - name: a\n", "url is required"},
		{"steps:\n  - name: a b\n    url: x\n", "letters, digits"},
		{"steps:\n  - name: a\n    url: x\n  - name: a\n    url: y\n", "taken"},
		{"steps:\n  - name: prompt\n    url: x\n", "taken"},
		{"steps:\n  - name: a\n    url: '{{.Vars'\n", "template"},
		{"steps:\n  - name: a\n    url: x\n    body: '{{define \"b\"}}{{end}}'\n", "{{define}} and {{block}} are not supported"},
		{"steps:\n  - name: a\n    url: x\n    extract: {v: a..b}\n", "empty part"},
		{"steps:\n  - name: a\n    url: x\n    timeout: soon\n", "timeout"},
		{"steps:\n  - name: a\n    url: x\n    bogus: 1\n", "bogus"},
		// A step reading a later step's values, or its own, is refused
		// before the load (it failed every request at run time).
		{"steps:\n  - name: a\n    url: x\n    body: '{{json .Vars.b.v}}'\n  - name: b\n    url: y\n    extract: {v: z}\n", "step 1 (a) body:1:12: reads .Vars.b, the values of step 2, which runs later"},
		{"steps:\n  - name: a\n    url: '{{$.Vars.a.v}}'\n    extract: {v: z}\n", "reads .Vars.a, the step's own values"},
		{"steps:\n  - name: a\n    url: x\n    headers: {X-K: '{{if .Vars.c}}1{{end}}'}\n  - name: b\n    url: y\n  - name: c\n    url: y\n", "the values of step 3"},
	} {
		spec, err := Parse([]byte(tc.in))
		if err == nil {
			_, err = New(spec, Config{Vars: map[string]any{"target": "x", "given": "y"}})
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want it to say %q", tc.in, err, tc.want)
		}
	}
}

// TestStepOrderAllowsGivenVars: a variable every step sees (Config.Vars)
// may share a later step's name; reading it early reads the variable.
func TestStepOrderAllowsGivenVars(t *testing.T) {
	spec, err := Parse([]byte("steps:\n  - name: a\n    url: '{{.Vars.given}}/{{.Vars.target}}'\n  - name: given\n    url: '{{.Vars.a}}'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(spec, Config{Vars: map[string]any{"target": "x", "given": "y"}}); err != nil {
		t.Fatalf("a given variable named like a later step: %v", err)
	}
}

func TestLookup(t *testing.T) {
	var v any
	_ = json.Unmarshal([]byte(`{"data":[{"embedding":[1,2]}],"s":"x"}`), &v)
	for _, tc := range []struct {
		path string
		want string
		err  bool
	}{
		{"data.0.embedding", "[1,2]", false},
		{"s", `"x"`, false},
		{"data.1", "", true},
		{"s.t", "", true},
		{"nope", "", true},
	} {
		got, err := lookup(v, strings.Split(tc.path, "."))
		if (err != nil) != tc.err {
			t.Errorf("%s: error %v", tc.path, err)
			continue
		}
		if !tc.err {
			b, _ := json.Marshal(got)
			if string(b) != tc.want {
				t.Errorf("%s: %s, want %s", tc.path, b, tc.want)
			}
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(ragSpec))
	f.Add([]byte("steps:\n  - name: a\n    url: x\n"))
	// Deeper than yamllimit.MaxDepth: refused before go-yaml sees it.
	f.Add([]byte("steps: " + strings.Repeat("[", 101) + strings.Repeat("]", 101)))
	f.Add([]byte("steps:\n" + strings.Repeat("- ", 101) + "x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err != nil {
			return
		}
		if len(s.Steps) == 0 {
			t.Fatal("accepted a workflow with no steps")
		}
		// New also refuses steps reading later steps, which depends on
		// the variables it is given; what Parse accepts compiles.
		if _, err := compile(s); err != nil {
			t.Fatalf("parsed but does not compile: %v", err)
		}
	})
}

func TestWriteSteps(t *testing.T) {
	scs := []result.Scenario{{Name: "main", Workflow: &result.Workflow{
		Name: "rag", Runs: 30, Succeeded: 20, Failed: 10, FailedAt: map[string]int{"search": 10},
		Steps: []result.WorkflowStep{
			{Name: "embed", Runs: 30, LatencyMS: result.Dist{P50: 30.5, P99: 31, P999: 31.2, Mean: 30.6}},
			{Name: "search", Runs: 30, Failed: 10, LatencyMS: result.Dist{P50: 20.1, P99: 22, P999: 22, Mean: 20.3}},
			{Name: "generate", Runs: 20, LatencyMS: result.Dist{P50: 50.2, P99: 55, P999: 55, Mean: 50.9},
				TTFTMS: &result.Dist{P50: 20.3}, ITLMS: &result.Dist{P50: 2.1}, OutputTokens: 320},
		},
		E2EMS: result.Dist{P50: 101, P99: 108, P999: 108, Mean: 102},
	}}, {Name: "no-workflow"}}
	var buf bytes.Buffer
	if err := WriteSteps(&buf, scs); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "steps.golden", buf.Bytes())
}

// TestDocExample keeps the example of docs/vector.md valid.
func TestDocExample(t *testing.T) {
	s, err := ReadFile(context.Background(), filepath.Join("testdata", "rag.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(s, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(w.StepNames(), ","); got != "embed,collection,search,generate" {
		t.Errorf("steps %s", got)
	}
}

// TestRunLevelFiguresAreTheAnswers: a workflow's run-level TTFT, gaps and
// output tokens are those of its last streamed step, the answer its user
// sees come (they were TTFT = E2E and 0 tokens whatever streamed); with no
// streamed step, TTFT is the time to the whole answer and there are no
// tokens; a step's event count without usage is no token count.
func TestRunLevelFiguresAreTheAnswers(t *testing.T) {
	t0 := time.Now()
	streamed := record.Step{Name: "generate", Start: t0.Add(30 * time.Millisecond), End: t0.Add(90 * time.Millisecond),
		FirstToken: t0.Add(50 * time.Millisecond), Gaps: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond},
		Chunks: 3, Tokens: 3, TokensFromUsage: true}
	for _, c := range []struct {
		name   string
		steps  []record.Step
		ttft   time.Duration
		tokens int
		gaps   int
	}{
		{"streamed answer", []record.Step{{Name: "retrieve", End: t0.Add(30 * time.Millisecond)}, streamed}, 50 * time.Millisecond, 3, 2},
		{"no usage", []record.Step{{Name: "retrieve"}, func() record.Step { s := streamed; s.TokensFromUsage = false; return s }()}, 50 * time.Millisecond, 0, 2},
		{"nothing streamed", []record.Step{{Name: "retrieve"}, {Name: "generate"}}, 100 * time.Millisecond, 0, 0},
	} {
		rec := &record.Record{}
		rec.Reset()
		rec.Sent, rec.End, rec.Steps = t0, t0.Add(100*time.Millisecond), c.steps
		answer(rec)
		if ttft, _ := rec.TTFT(); ttft != c.ttft || rec.OutputTokens != c.tokens || len(rec.Gaps) != c.gaps {
			t.Errorf("%s: TTFT %v, %d tokens, %d gaps; want %v, %d, %d", c.name, ttft, rec.OutputTokens, len(rec.Gaps), c.ttft, c.tokens, c.gaps)
		}
	}
}
