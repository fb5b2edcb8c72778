package openai

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
)

// forceNetHTTP makes newClient use net/http for streams (see
// TestNetHTTPPath); tests do not run in parallel.
var forceNetHTTP bool

// TestNetHTTPPath runs the stream tests again on the net/http path, which
// serves where the reactor cannot (not Linux, https, a caller's client).
func TestNetHTTPPath(t *testing.T) {
	forceNetHTTP = true
	defer func() { forceNetHTTP = false }()
	for _, tc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"timings", TestTimingsAgainstKnownServer},
		{"shapes", TestStreamShapes},
		{"failures", TestFailures},
		{"connect and cancel", TestConnectErrorAndCancel},
		{"trace and answer", TestTraceAndAnswer},
		{"hostile connections", TestHostileConnections},
		{"hostile reads", TestHostileReads},
		{"retry-after", TestRetryAfterHeader},
		{"whole bodies", TestNonStreamAndEmbeddings},
		{"whole responses", TestResponsesWhole},
		{"whole answer error", TestWholeAnswerErrorKeepsMessage},
	} {
		t.Run(tc.name, tc.fn)
	}
}

// stampServer streams n content events, the first after ttft and then one
// every itl, and keeps when it wrote each (after the flush returned), per
// request in order of arrival.
type stampServer struct {
	*httptest.Server
	mu     sync.Mutex
	writes [][]time.Time // after each event's write, per request
	first  []time.Time   // before each request's first write
}

func newStampServer(ttft, itl time.Duration, n int) *stampServer {
	s := &stampServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		wrote := make([]time.Time, 0, n)
		var before time.Time
		for i := range n {
			time.Sleep(time.Until(start.Add(ttft + time.Duration(i)*itl)))
			if i == 0 {
				before = time.Now()
			}
			fmt.Fprintf(w, "data: %s\n\n", chunk(" the"))
			fl.Flush()
			wrote = append(wrote, time.Now())
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		s.mu.Lock()
		s.writes, s.first = append(s.writes, wrote), append(s.first, before)
		s.mu.Unlock()
	}))
	return s
}

func (s *stampServer) last() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes[len(s.writes)-1]
}

// lastFirst is the time just before the last request's first write.
func (s *stampServer) lastFirst() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first[len(s.first)-1]
}

// TestReactorStampsMatchNetHTTP proves the reactor path's timestamps
// honest at low load, against the same server as the net/http path's
// per-read stamps. The server is in the test's process, so each event's
// stamp is compared with when the server wrote it (same clock). The
// reactor's stamps are the kernel's receive times: the first event's
// (TTFT less the server's timing) is within 0.2 ms of the server's stamps
// taken just before and just after its write (median), and not
// later than net/http's by more than 0.2 ms (net/http's come a wake-up
// later, about 0.1 ms here); the gaps (ITL less the server's gaps) agree
// with net/http's within 0.2 ms. Medians; requests alternate between the
// two paths so that both see the same machine. Streams of 10 events (55
// ms) keep 15 first events and 135 gaps a path.
func TestReactorStampsMatchNetHTTP(t *testing.T) {
	if !rawhttp.Available() {
		t.Skip("no reactor on this platform")
	}
	const ttft, itl, n = 10 * time.Millisecond, 5 * time.Millisecond, 10
	srv := newStampServer(ttft, itl, n)
	defer srv.Close()
	reactor := newClient(t, srv.URL, nil)
	defer reactor.Close()
	if reactor.raw == nil {
		t.Fatal("the reactor path is not in use")
	}
	nethttp := newClient(t, srv.URL, func(c *Config) { c.NetHTTP = true })
	if nethttp.raw != nil {
		t.Fatal("NetHTTP did not select net/http")
	}
	// first: first event's stamp − its write; gap: ITL − the writes' gap;
	// outside: how far the reactor's first stamp fell outside the server's
	// stamps taken just before and just after that write (a loaded
	// machine can preempt the server between its write and its stamp).
	var first, gap [2][]time.Duration
	var outside []time.Duration
	for i := range 15 {
		for p, c := range []*Client{reactor, nethttp} {
			rec := do(c, &workload.Request{Prompt: "hi", MaxTokens: n})
			if rec.Failed() {
				t.Fatalf("request %d: %s %s", i, rec.Err, rec.ErrMsg)
			}
			wrote := srv.last()
			if rec.Chunks != n || len(wrote) != n {
				t.Fatalf("request %d: %d chunks, %d written, want %d", i, rec.Chunks, len(wrote), n)
			}
			if p == 0 && rec.ReadLag <= 0 {
				t.Fatalf("request %d: the reactor measured no read lag", i)
			}
			first[p] = append(first[p], rec.FirstToken.Sub(wrote[0]))
			if p == 0 {
				var d time.Duration
				switch before := srv.lastFirst(); {
				case rec.FirstToken.Before(before):
					d = rec.FirstToken.Sub(before)
				case rec.FirstToken.After(wrote[0]):
					d = rec.FirstToken.Sub(wrote[0])
				}
				outside = append(outside, d)
			}
			for j, g := range rec.Gaps {
				gap[p] = append(gap[p], g-wrote[j+1].Sub(wrote[j]))
			}
		}
	}
	const tol = 200 * time.Microsecond
	r, h := median(first[0]), median(first[1])
	o := median(outside)
	t.Logf("median first event's stamp − its write: reactor %v (outside the write's stamps by %v), net/http %v", r, o, h)
	if o.Abs() > tol || r > h+tol {
		t.Errorf("median first event's stamp − its write: reactor %v (outside the server's stamps around the write by %v), net/http %v: want within 0.2 ms of the write, and not over 0.2 ms after net/http", r, o, h)
	}
	r, h = median(gap[0]), median(gap[1])
	t.Logf("median ITL − the server's gap: reactor %v, net/http %v", r, h)
	if (r - h).Abs() > tol {
		t.Errorf("median ITL − the server's gap: reactor %v, net/http %v: over 0.2 ms apart", r, h)
	}
}

// TestLateStampsCounted: the events of a read that came over 1 ms after
// its bytes may have arrived are late (all but the read's last, which has
// the kernel's receive time; all of them without it), and so are the
// first token's time when its event is late and every gap with a late
// event at either end (TTFT and ITL are judged by their own shares: a
// late first token is one event in a stream of many). A read reaches Body
// once (a body that is not chunked), once per HTTP chunk of one event
// each, or as one chunk of several events: a chunk is one write of the
// server's, whose events arrived together, so its kernel stamp is theirs.
func TestLateStampsCounted(t *testing.T) {
	ev := func(n int) []byte {
		var b []byte
		for range n {
			b = append(b, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a\"}}]}\n\n"...)
		}
		return b
	}
	type read struct {
		events int
		bound  time.Duration
		kernel bool
	}
	late, prompt := 5*time.Millisecond, 200*time.Microsecond
	for _, tc := range []struct {
		name           string
		reads          []read
		events, gaps   int
		first          bool
		lateEv, lateGp int
		// oneWrite: the late stamps are all shared kernel stamps, exact
		// when each read is one chunk (one write).
		oneWrite bool
	}{
		{"prompt reads", []read{{1, prompt, true}, {1, prompt, true}, {1, prompt, true}}, 3, 2, false, 0, 0, true},
		{"first two in one late read", []read{{2, late, true}, {1, prompt, true}}, 3, 2, true, 1, 1, true},
		{"a late read of one event, kernel stamp", []read{{1, late, true}, {1, prompt, true}}, 2, 1, false, 0, 0, true},
		{"a late read without a receive time", []read{{1, prompt, false}, {1, late, false}, {1, prompt, false}}, 3, 2, false, 1, 2, false},
		{"late later on", []read{{1, prompt, true}, {3, late, true}, {1, prompt, true}}, 5, 4, false, 2, 3, true},
		{"first late without a receive time", []read{{1, late, false}, {2, prompt, false}}, 3, 2, true, 1, 1, false},
	} {
		for _, mode := range []string{"unchunked", "a chunk an event", "a chunk a read"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				c := newClient(t, "http://127.0.0.1:1", nil)
				defer c.Close()
				rec := &record.Record{}
				rec.Reset()
				st := &stream{c: c, rec: rec, status: http.StatusOK, streamed: true}
				st.emit = st.onEvent
				st.push.Reset(c.cfg.MaxLine)
				at := time.Now()
				chunk := 0
				for i, r := range tc.reads {
					at = at.Add(10 * time.Millisecond)
					rd := rawhttp.Read{At: at, Bound: r.bound, Kernel: r.kernel, N: i + 1}
					parts := [][]byte{ev(r.events)}
					if mode == "a chunk an event" {
						parts = parts[:0]
						for range r.events {
							parts = append(parts, ev(1))
						}
					}
					for _, p := range parts {
						if mode != "unchunked" {
							chunk++
							rd.Chunk = chunk
						}
						if err := st.Body(p, rd); err != nil {
							t.Fatal(err)
						}
					}
				}
				if rec.Chunks != tc.events || len(rec.Gaps) != tc.gaps {
					t.Fatalf("%d events, %d gaps; want %d, %d", rec.Chunks, len(rec.Gaps), tc.events, tc.gaps)
				}
				first, lateEv, lateGp := tc.first, tc.lateEv, tc.lateGp
				if mode == "a chunk a read" && tc.oneWrite {
					first, lateEv, lateGp = false, 0, 0
				}
				if rec.LateFirst != first || rec.LateEvents != lateEv || rec.LateGaps != lateGp {
					t.Errorf("late first %v, events %d, gaps %d; want %v, %d, %d", rec.LateFirst, rec.LateEvents, rec.LateGaps, first, lateEv, lateGp)
				}
				// A late first token carries its read's bound (the test's
				// late reads' is `late`); an on-time one none.
				if wantBound := map[bool]time.Duration{true: late}[first]; rec.FirstBound != wantBound {
					t.Errorf("first bound %v, want %v", rec.FirstBound, wantBound)
				}
			})
		}
	}
}

// TestWholeBodyEndsAtItsLastRead: a non-streamed response (chat,
// embeddings, rerank) ends when its last bytes came, not when the caller
// next ran: with every read held 80 ms after its wake-up (the reactor's
// for http://, the stamped connection's under net/http for https://),
// E2E still ends within the server's write; without kernel stamps, E2E
// and TTFT carry the late read's bound.
func TestWholeBodyEndsAtItsLastRead(t *testing.T) {
	if !rawhttp.Available() {
		t.Skip("the reactor path is not in use")
	}
	wrote := make(chan [2]time.Time, 1) // around the body's write
	answer := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Accept") == "text/event-stream" {
				t.Errorf("a non-streamed request asked for an event stream")
			}
			time.Sleep(30 * time.Millisecond)
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w0 := time.Now()
			fmt.Fprint(w, body)
			w.(http.Flusher).Flush()
			wrote <- [2]time.Time{w0, time.Now()}
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/chat/completions", answer(`{"model":"m1","choices":[{"message":{"role":"assistant","content":" a b c"}}],"usage":{"prompt_tokens":4,"completion_tokens":3}}`))
	mux.Handle("/v1/embeddings", answer(`{"data":[{"embedding":[0.1,0.2]}],"usage":{"prompt_tokens":9,"total_tokens":9}}`))
	mux.Handle("/v1/rerank", answer(`{"results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":0.1}],"usage":{"total_tokens":7}}`))
	// The reactor reads http://; net/http reads https://, through a
	// connection that stamps its reads (stamped.go).
	plain, tlsSrv := httptest.NewServer(mux), httptest.NewTLSServer(mux)
	defer plain.Close()
	defer tlsSrv.Close()
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		req  workload.Request
	}{
		{"chat", func(c *Config) { c.Stream = false }, workload.Request{Prompt: "p"}},
		{"embeddings", func(c *Config) { c.API = Embeddings }, workload.Request{Prompt: "p"}},
		{"rerank", func(c *Config) { c.API, c.Stream = Rerank, false }, workload.Request{Prompt: "q", Documents: []string{"a", "b"}}},
	} {
		// Without the kernel's receive stamps the late read's own time
		// is the end: E2E and TTFT (the same instant) carry how late it
		// may be, and the server's write lies within the range.
		for _, srv := range []*httptest.Server{plain, tlsSrv} {
			for _, kernel := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/kernel stamps %v", tc.name, strings.Split(srv.URL, ":")[0], kernel), func(t *testing.T) {
					wholeBodyEnd(t, srv, tc.mod, &tc.req, kernel, wrote)
				})
			}
		}
	}
}

// wholeBodyEnd is one case of TestWholeBodyEndsAtItsLastRead: a request
// of req to srv (http:// by the reactor, https:// by net/http) whose
// response is read 80 ms late; wrote gives the server's write window.
func wholeBodyEnd(t *testing.T, srv *httptest.Server, mod func(*Config), req *workload.Request, kernel bool, wrote chan [2]time.Time) {
	if !kernel {
		defer rawhttp.SetNoKernelStamps()()
	}
	c := newClient(t, srv.URL, func(cfg *Config) {
		mod(cfg)
		if srv.TLS != nil {
			cfg.HTTP = tlsClient(srv)
		}
	})
	defer c.Close()
	if (c.raw == nil) != (srv.TLS != nil) {
		t.Fatalf("the reactor path in use: %v, want it for http:// only", c.raw != nil)
	}
	if rec := do(c, req); rec.Failed() { // the connection, unstalled
		t.Fatalf("%s %s", rec.Err, rec.ErrMsg)
	}
	<-wrote
	restore := rawhttp.SetWakeStall(80 * time.Millisecond)
	rec := do(c, req)
	restore()
	if rec.Failed() {
		t.Fatalf("%s %s", rec.Err, rec.ErrMsg)
	}
	w := <-wrote
	lo, hi := w[0].Sub(rec.Sent), w[1].Sub(rec.Sent)
	e2e := rec.E2E()
	if kernel {
		if e2e < lo-time.Millisecond || e2e > hi+20*time.Millisecond {
			t.Errorf("E2E %v, want within the server's write (%v…%v, −1 ms…+20 ms): it was read 80 ms late", e2e, lo, hi)
		}
		if rec.EndBound != 0 || rec.LateFirst {
			t.Errorf("a kernel-stamped end carries end bound %v, late first %v; want none", rec.EndBound, rec.LateFirst)
		}
		return
	}
	if rec.EndBound < 70*time.Millisecond || !rec.LateFirst || rec.FirstBound != rec.EndBound || rec.LateEvents != 1 {
		t.Fatalf("end bound %v, late first %v, first bound %v, late events %d; want a bound of at least 70 ms (the 80 ms stall) on the end and the first token alike, one late event",
			rec.EndBound, rec.LateFirst, rec.FirstBound, rec.LateEvents)
	}
	if e2e-rec.EndBound > hi+time.Millisecond || e2e < lo {
		t.Errorf("E2E %v less its bound %v, want the range to hold the server's write (%v…%v)", e2e, rec.EndBound, lo, hi)
	}
	if ttft, ok := rec.TTFT(); !ok || ttft != e2e {
		t.Errorf("TTFT %v, want the whole answer's E2E %v", ttft, e2e)
	}
}

// tlsClient is an HTTP client with NewTransport's connections (reads
// stamped) that trusts srv's certificate.
func tlsClient(srv *httptest.Server) *http.Client {
	tr := NewTransport()
	tr.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	return &http.Client{Transport: tr}
}
