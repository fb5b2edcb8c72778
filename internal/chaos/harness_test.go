package chaos

import (
	"context"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/engine"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/internal/workload/tokenizer"
	"github.com/spate-dev/spate/sim"
)

// startSim starts the simulator in deterministic mode on loopback and
// returns its root URL (no /v1).
func startSim(t testing.TB, ttft, itl time.Duration, tokens int) string {
	t.Helper()
	s, err := sim.New(sim.Deterministic(ttft, itl, tokens))
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		_ = s.Close()
		hs.Close()
	})
	return hs.URL
}

// startProxy starts a proxy to upstream on loopback with set applied.
func startProxy(t testing.TB, upstream string, set *Set) (*Proxy, string) {
	t.Helper()
	p, err := New(upstream)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if set != nil {
		if err := p.Apply(*set); err != nil {
			t.Fatalf("Apply: %v", err)
		}
	}
	hs := httptest.NewServer(p)
	t.Cleanup(func() {
		p.Close()
		hs.CloseClientConnections()
		hs.Close()
	})
	return p, hs.URL
}

// outcome is the part of a record the tests look at.
type outcome struct {
	err              record.ErrorKind
	msg              string
	intent           string
	status           int
	sent, end, first time.Time
	maxGap, medGap   time.Duration
	gaps, lateGaps   int
}

type collect struct {
	mu  sync.Mutex
	out []outcome
}

func (c *collect) Sent(time.Time, time.Time, bool) {}
func (c *collect) Record(rec *record.Record) {
	r := outcome{err: rec.Err, msg: rec.ErrMsg, intent: rec.Intent, status: rec.Status, sent: rec.Sent, end: rec.End, first: rec.FirstToken, gaps: len(rec.Gaps), lateGaps: rec.LateGaps}
	for _, g := range rec.Gaps {
		r.maxGap = max(r.maxGap, g)
	}
	c.mu.Lock()
	c.out = append(c.out, r)
	c.mu.Unlock()
}

// newClient returns an OpenAI chat client to base (root URL).
func newClient(t testing.TB, base string, timeout time.Duration) *openai.Client {
	t.Helper()
	tok, err := tokenizer.CL100K()
	if err != nil {
		t.Fatal(err)
	}
	c, err := openai.New(openai.Config{BaseURL: base + "/v1", API: openai.Chat, Model: sim.DefaultModel, Stream: true,
		Timeout: timeout, Tokenizer: tok})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// load sends n requests with the given concurrency through client and
// returns what each got.
func load(t testing.TB, client engine.Client, n, concurrency int) []outcome {
	t.Helper()
	sink := &collect{}
	runLoad(t, client, workload.Synthetic{Input: workload.Lengths{Mean: 8}, Output: workload.Lengths{Mean: 4}, Seed: 1}, sink, n, concurrency)
	return sink.out
}

// runLoad sends n requests of src with the given concurrency into sink.
func runLoad(t testing.TB, client engine.Client, src workload.Source, sink *collect, n, concurrency int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := engine.Run(ctx, engine.Config{
		Concurrency: concurrency, Requests: n,
		Source: src, Client: client, Sink: sink, DrainTimeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatalf("engine.Run: %v", err)
	}
	if len(sink.out) != n {
		t.Fatalf("%d records, want %d", len(sink.out), n)
	}
}

func countErr(rs []outcome, kind record.ErrorKind) int {
	n := 0
	for _, r := range rs {
		if r.err == kind {
			n++
		}
	}
	return n
}

func listenLoopback() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
