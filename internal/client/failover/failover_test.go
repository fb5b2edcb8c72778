package failover

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/engine"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/llmtest"
)

// fake is an upstream whose attempts end as outcomes says, in order (the
// last repeats); it logs its name on every attempt.
type fake struct {
	name     string
	outcomes []record.ErrorKind
	streamed bool // set a first token before failing
	// retryAfter is set on every failed attempt's record.
	retryAfter time.Duration
	mu         sync.Mutex
	calls      int
	log        *[]string
}

func (f *fake) Do(ctx context.Context, req *workload.Request, rec *record.Record) {
	f.mu.Lock()
	o := f.outcomes[min(f.calls, len(f.outcomes)-1)]
	f.calls++
	*f.log = append(*f.log, f.name)
	f.mu.Unlock()
	if o == record.Cancelled { // a black-hole: wait for the caller to give up
		<-ctx.Done()
		rec.Fail(record.Cancelled, "cancelled", time.Now())
		return
	}
	if f.streamed {
		rec.FirstToken = time.Now()
		rec.Chunks = 1
	}
	if o != record.OK {
		rec.Fail(o, string(o), time.Now())
		rec.RetryAfter = f.retryAfter
	}
}

// TestRetryAfter: a 429's Retry-After is the least wait before the same
// upstream is tried again (retries ignored it); one over MaxRetryAfter
// ends the retries; another upstream is not held back by it.
func TestRetryAfter(t *testing.T) {
	run := func(cfg Config) ([]time.Duration, record.Record) {
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var waits []time.Duration
		c.sleep = func(_ context.Context, d time.Duration) bool { waits = append(waits, d); return true }
		var rec record.Record
		rec.Reset()
		c.Do(context.Background(), &workload.Request{}, &rec)
		return waits, rec
	}
	var log []string
	limited := &fake{name: "a", outcomes: []record.ErrorKind{record.RateLimited, record.OK}, retryAfter: 3 * time.Second, log: &log}
	waits, rec := run(Config{Upstreams: []Upstream{{"a", limited}}, Retries: 2, Budget: 10, Backoff: 10 * time.Millisecond})
	if len(waits) != 1 || waits[0] < 2900*time.Millisecond || waits[0] > 3*time.Second || rec.Failed() || rec.Attempts != 2 {
		t.Errorf("one upstream: waits %v, attempts %d, error %q; want one wait of about 3s, then success", waits, rec.Attempts, rec.Err)
	}
	tooLong := &fake{name: "a", outcomes: []record.ErrorKind{record.RateLimited}, retryAfter: 2 * time.Minute, log: &log}
	waits, rec = run(Config{Upstreams: []Upstream{{"a", tooLong}}, Retries: 2, Budget: 10})
	if len(waits) != 0 || rec.Err != record.RateLimited || rec.Attempts != 1 {
		t.Errorf("over MaxRetryAfter: waits %v, attempts %d, error %q; want no retry", waits, rec.Attempts, rec.Err)
	}
	waits, rec = run(Config{Upstreams: []Upstream{{"a", tooLong}}, Retries: 2, Budget: 10, MaxRetryAfter: 3 * time.Minute})
	if len(waits) != 2 || waits[0] < 119*time.Second || rec.Attempts != 3 {
		t.Errorf("MaxRetryAfter raised: waits %v, attempts %d", waits, rec.Attempts)
	}
	other := &fake{name: "b", outcomes: []record.ErrorKind{record.OK}, log: &log}
	a := &fake{name: "a", outcomes: []record.ErrorKind{record.RateLimited}, retryAfter: 30 * time.Second, log: &log}
	waits, rec = run(Config{Upstreams: []Upstream{{"a", a}, {"b", other}}, Policy: Failover, Budget: 10})
	if len(waits) != 1 || waits[0] != 0 || rec.Failed() || rec.Upstream != "b" {
		t.Errorf("failover to another upstream: waits %v, upstream %s, error %q", waits, rec.Upstream, rec.Err)
	}
}

func TestPolicies(t *testing.T) {
	ok, e503, e400, conn := record.OK, record.HTTPStatus(503), record.HTTPStatus(400), record.Connect
	for _, tc := range []struct {
		name     string
		policy   Policy
		retries  int
		a, b     []record.ErrorKind
		requests int
		wantLog  []string
		wantErr  record.ErrorKind
		wantAtt  int
	}{
		{"rr alternates", RoundRobin, 0, []record.ErrorKind{ok}, []record.ErrorKind{ok}, 4, []string{"a", "b", "a", "b"}, ok, 1},
		{"rr retry goes to next", RoundRobin, 1, []record.ErrorKind{e503}, []record.ErrorKind{ok}, 1, []string{"a", "b"}, ok, 2},
		{"rr no retries", RoundRobin, 0, []record.ErrorKind{e503}, []record.ErrorKind{ok}, 1, []string{"a"}, e503, 1},
		{"failover on connect", Failover, 0, []record.ErrorKind{conn}, []record.ErrorKind{ok}, 2, []string{"a", "b", "a", "b"}, ok, 2},
		{"failover then retries", Failover, 2, []record.ErrorKind{e503}, []record.ErrorKind{e503, ok}, 1, []string{"a", "b", "a", "b"}, ok, 4},
		{"failover all fail", Failover, 1, []record.ErrorKind{e503}, []record.ErrorKind{e503}, 1, []string{"a", "b", "a"}, e503, 3},
		{"4xx not retried", Failover, 3, []record.ErrorKind{e400}, []record.ErrorKind{ok}, 1, []string{"a"}, e400, 1},
		{"429 retried", Failover, 0, []record.ErrorKind{record.RateLimited}, []record.ErrorKind{ok}, 1, []string{"a", "b"}, ok, 2},
		{"never after content", Failover, 3, []record.ErrorKind{record.StreamBroken}, []record.ErrorKind{ok}, 1, []string{"a"}, record.StreamBroken, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			a := &fake{name: "a", outcomes: tc.a, log: &log, streamed: tc.name == "never after content"}
			b := &fake{name: "b", outcomes: tc.b, log: &log}
			c, err := New(Config{Upstreams: []Upstream{{"a", a}, {"b", b}}, Policy: tc.policy, Retries: tc.retries, Budget: 10, Backoff: time.Microsecond})
			if err != nil {
				t.Fatal(err)
			}
			var last record.Record
			for i := 0; i < tc.requests; i++ {
				var rec record.Record
				rec.Reset()
				rec.Seq, rec.Sent, rec.Intent = uint64(i), time.Unix(100, 0), "x"
				c.Do(context.Background(), &workload.Request{}, &rec)
				if !rec.Sent.Equal(time.Unix(100, 0)) || rec.Intent != "x" || rec.Seq != uint64(i) {
					t.Errorf("engine fields lost: %+v", rec)
				}
				last = rec
			}
			if !slices.Equal(log, tc.wantLog) {
				t.Errorf("attempts went to %v, want %v", log, tc.wantLog)
			}
			if last.Err != tc.wantErr || last.Attempts != tc.wantAtt || last.Upstream != log[len(log)-1] {
				t.Errorf("last record: err %q attempts %d upstream %q; want %q, %d, %q", last.Err, last.Attempts, last.Upstream, tc.wantErr, tc.wantAtt, log[len(log)-1])
			}
		})
	}
}

// TestBudget: with the first upstream down and a 20 % budget, at most
// 20 % + 1 of requests fail over; the rest fail.
func TestBudget(t *testing.T) {
	var log []string
	a := &fake{name: "a", outcomes: []record.ErrorKind{record.Connect}, log: &log}
	b := &fake{name: "b", outcomes: []record.ErrorKind{record.OK}, log: &log}
	c, _ := New(Config{Upstreams: []Upstream{{"a", a}, {"b", b}}, Policy: Failover, Budget: 0.2})
	okN := 0
	for i := 0; i < 100; i++ {
		var rec record.Record
		rec.Reset()
		c.Do(context.Background(), &workload.Request{}, &rec)
		if !rec.Failed() {
			okN++
		}
	}
	st := c.Stats()
	if st.Extra != 21 || okN != 21 || st.Denied != 79 || st.Requests != 100 {
		t.Errorf("stats %+v, %d ok; want 21 extra attempts and 21 ok, 79 denied", st, okN)
	}
}

// TestBackoff: retry k waits Backoff·2^(k−1) with equal jitter, capped.
func TestBackoff(t *testing.T) {
	var log []string
	a := &fake{name: "a", outcomes: []record.ErrorKind{record.Timeout}, log: &log}
	c, _ := New(Config{Upstreams: []Upstream{{"a", a}}, Policy: RoundRobin, Retries: 5, Budget: 100, Backoff: 100 * time.Millisecond, MaxBackoff: 500 * time.Millisecond})
	var waits []time.Duration
	c.sleep = func(_ context.Context, d time.Duration) bool { waits = append(waits, d); return true }
	var rec record.Record
	rec.Reset()
	c.Do(context.Background(), &workload.Request{}, &rec)
	if len(waits) != 5 || rec.Attempts != 6 {
		t.Fatalf("waits %v, attempts %d; want 5 waits, 6 attempts", waits, rec.Attempts)
	}
	for k, w := range waits {
		full := min(100*time.Millisecond<<k, 500*time.Millisecond)
		if w < full/2 || w > full {
			t.Errorf("wait %d: %v, want in [%v, %v]", k+1, w, full/2, full)
		}
	}
	if slices.Equal(waits[:2], []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}) {
		t.Errorf("no jitter: %v", waits)
	}
}

// TestAttemptTimeout: a black-holed first upstream is left after the
// attempt timeout, recorded as a timeout, and the second answers.
func TestAttemptTimeout(t *testing.T) {
	var log []string
	a := &fake{name: "a", outcomes: []record.ErrorKind{record.Cancelled}, log: &log}
	b := &fake{name: "b", outcomes: []record.ErrorKind{record.OK}, log: &log}
	c, _ := New(Config{Upstreams: []Upstream{{"a", a}, {"b", b}}, Policy: Failover, Budget: 1, AttemptTimeout: 50 * time.Millisecond})
	var rec record.Record
	rec.Reset()
	rec.Sent = time.Now()
	c.Do(context.Background(), &workload.Request{}, &rec)
	if rec.Failed() || rec.Attempts != 2 || rec.Upstream != "b" {
		t.Errorf("record: err %q attempts %d upstream %q", rec.Err, rec.Attempts, rec.Upstream)
	}
	// Only a's attempt: a's own timeout, seen alone.
	c1, _ := New(Config{Upstreams: []Upstream{{"a", a}}, AttemptTimeout: 20 * time.Millisecond})
	rec.Reset()
	c1.Do(context.Background(), &workload.Request{}, &rec)
	if rec.Err != record.Timeout {
		t.Errorf("lone black-hole: %q, want timeout", rec.Err)
	}
	// The run stopping is not a timeout and is not retried.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec.Reset()
	c.Do(ctx, &workload.Request{}, &rec)
	if rec.Err != record.Cancelled || rec.Attempts != 1 {
		t.Errorf("cancelled run: %q after %d attempts", rec.Err, rec.Attempts)
	}
}

func TestNewErrors(t *testing.T) {
	up := []Upstream{{"a", engine.ClientFunc(func(context.Context, *workload.Request, *record.Record) {})}}
	for _, cfg := range []Config{{}, {Upstreams: up, Policy: "random"}, {Upstreams: up, Retries: -1}, {Upstreams: up, Budget: -1}, {Upstreams: []Upstream{{"a", nil}}}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
	if _, err := ParsePolicy("failover"); err != nil {
		t.Error(err)
	}
}

// TestAttemptTimeoutSparesStreams: an attempt whose response has begun
// runs past the attempt timeout (a real server behind an OpenAI client).
func TestAttemptTimeoutSparesStreams(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{TTFT: 10 * time.Millisecond, ITL: 20 * time.Millisecond, Tokens: 10})
	defer srv.Close()
	oc, err := openai.New(openai.Config{BaseURL: srv.BaseURL(), API: openai.Chat, Model: "llmtest", Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := New(Config{Upstreams: []Upstream{{"a", oc}}, AttemptTimeout: 100 * time.Millisecond})
	var rec record.Record
	rec.Reset()
	rec.Sent = time.Now()
	c.Do(context.Background(), &workload.Request{Prompt: "hi", MaxTokens: 10}, &rec)
	if rec.Failed() || rec.End.Sub(rec.Sent) < 190*time.Millisecond {
		t.Errorf("stream of ~190 ms under a 100 ms attempt timeout: err %q (%s) after %v", rec.Err, rec.ErrMsg, rec.End.Sub(rec.Sent))
	}
}
