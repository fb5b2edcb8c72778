package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/jitter"
	"github.com/spate-dev/spate/result"
	"github.com/spate-dev/spate/sim"
)

// TestRerankAndScoreRun drives the simulator's /v1/rerank and /v1/score,
// which answer 30 ms after a request: E2E (and TTFT, the same for an
// answer that comes whole) has its median at 30 ms, every request ranks
// its 10 documents, documents per second are ten times requests per
// second, and input tokens come from the server's usage.
func TestRerankAndScoreRun(t *testing.T) {
	s, err := sim.New(sim.Deterministic(30*time.Millisecond, time.Millisecond, 4))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The server's own time for each answer, from the request's arrival to
	// its last byte: the simulator's 30 ms plus whatever a busy machine
	// adds to its work (under three suites, 17-22 ms a request, which no
	// timer probe sees).
	var mu sync.Mutex
	var served []float64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/rerank") || strings.HasSuffix(r.URL.Path, "/score") {
			mu.Lock()
			served = append(served, ms(time.Since(start)))
			mu.Unlock()
		}
	}))
	defer srv.Close()
	for _, api := range []string{"rerank", "score"} {
		out := filepath.Join(t.TempDir(), "r.json")
		var r *result.Result
		var stdout string
		// The medians on the best of a few runs, widened by the machine's
		// timer lateness meanwhile (package jitter): the simulator's 30 ms
		// timer fires late on a busy machine.
		jitter.BestOf(t, func() []string {
			mu.Lock()
			served = served[:0]
			mu.Unlock()
			probe := jitter.Start(time.Millisecond)
			code, so, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", srv.URL+"/v1", "--api", api,
				"--input-tokens", "12", "--concurrency", "2", "--requests", "20", "--out", out, "--progress", "0")
			late := probe.Stop()
			stdout = so
			if code != 0 {
				t.Fatalf("%s: exit %d\n%s\n%s", api, code, stdout, stderr)
			}
			r = readResult(t, out)
			sc := r.Scenarios[0]
			if sc.Requests.Succeeded != 20 {
				t.Fatalf("%s: %d of 20 succeeded: %+v", api, sc.Requests.Succeeded, sc.Requests)
			}
			mu.Lock()
			truth := median(served)
			mu.Unlock()
			var problems []string
			for _, m := range []string{"e2e_ms", "ttft_ms"} {
				// At least the simulator's 30 ms, and what the server took
				// plus the client's side of loopback (a few ms, widened by
				// the machine's timer lateness).
				if p50, hi := sc.Metrics[m].P50, truth+ms(late.Widen(5*time.Millisecond, 4)); p50 < 29.5 || p50 > hi {
					problems = append(problems, fmt.Sprintf("%s: %s p50 %.2f ms, want the server's %.2f ms (≥ 30; +%.1f; %v)", api, m, p50, truth, hi-truth, late))
				}
			}
			return problems
		})
		sc := r.Scenarios[0]
		if d, rps := sc.Throughput.DocumentsPerS, sc.Throughput.RequestsPerS; d < 9.99*rps || d > 10.01*rps {
			t.Errorf("%s: %.2f documents/s at %.2f req/s, want 10 a request", api, d, rps)
		}
		// 10 pairs of a 12-token query and a 64-token document.
		if in := sc.Tokens.Input; in < 20*10*(12+64)*9/10 || in > 20*10*(12+64)*11/10 {
			t.Errorf("%s: %d input tokens, want about %d", api, in, 20*10*(12+64))
		}
		if !strings.Contains(stdout, "documents") || !strings.Contains(stdout, "ranked/s") {
			t.Errorf("%s: no documents line:\n%s", api, stdout)
		}
		if r.Config.Stream {
			t.Errorf("%s: config says streamed", api)
		}
	}
}

// TestRerankChecksTheAnswer fails requests whose answer does not rank the
// documents sent: here results out of order and an index out of range.
func TestRerankChecksTheAnswer(t *testing.T) {
	for _, answer := range []string{
		`{"results":[{"index":0,"relevance_score":0.1},{"index":1,"relevance_score":0.9}]}`,
		`{"results":[{"index":99,"relevance_score":0.9}]}`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = io.WriteString(w, answer)
		}))
		out := filepath.Join(t.TempDir(), "r.json")
		code, stdout, stderr := cli(t, context.Background(), "run", "--target", srv.URL+"/v1", "--api", "rerank", "--model", "m",
			"--requests", "3", "--concurrency", "1", "--out", out, "--quiet")
		srv.Close()
		if code == 0 {
			t.Fatalf("%s: exit 0, want a failure\n%s\n%s", answer, stdout, stderr)
		}
		if sc := readResult(t, out).Scenarios[0]; sc.Requests.Succeeded != 0 || sc.Requests.Failed != 3 || sc.Requests.Errors["bad_response"] != 3 {
			t.Errorf("%s: requests %+v, want 3 failed as bad_response", answer, sc.Requests)
		}
	}
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// median is the middle of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}
