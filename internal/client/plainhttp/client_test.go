package plainhttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
)

func do(t *testing.T, c *Client, ctx context.Context, req *workload.Request) *record.Record {
	t.Helper()
	rec := &record.Record{}
	rec.Reset()
	rec.Sent = time.Now()
	c.Do(ctx, req, rec)
	return rec
}

// TestTimeToFirstByteAndEnd holds the client's figures to what the server
// did: it notes when it flushed the status and when it wrote the last
// byte, and the client's first-byte and end times must follow those (a
// loaded machine makes the server's sleeps long, not the client wrong).
func TestTimeToFirstByteAndEnd(t *testing.T) {
	stamps := make(chan [4]time.Time, 1) // before and after the flush, and the last write
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != "POST" || r.URL.Path != "/search" || string(b) != `{"q":1}` || r.Header.Get("X-K") != "v" {
			http.Error(w, "bad request "+r.Method+r.URL.Path+string(b), 400)
			return
		}
		time.Sleep(40 * time.Millisecond)
		w.WriteHeader(200)
		f0 := time.Now()
		w.(http.Flusher).Flush()
		f1 := time.Now()
		time.Sleep(60 * time.Millisecond)
		io.WriteString(w, "done")
		w0 := time.Now()
		w.(http.Flusher).Flush()
		stamps <- [4]time.Time{f0, f1, w0, time.Now()}
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, Headers: http.Header{"X-K": {"v"}}, FastHTTP: forceFastHTTP})
	if err != nil {
		t.Fatal(err)
	}
	rec := do(t, c, context.Background(), &workload.Request{Method: "POST", Path: "/search", Body: []byte(`{"q":1}`)})
	if rec.Failed() {
		t.Fatalf("%s %s", rec.Err, rec.ErrMsg)
	}
	// The client's stamps must fall between the server's stamps around the
	// write (the kernel's receive time is taken during it), up to a
	// scheduling delay after.
	st := <-stamps
	ttfb, _ := rec.TTFT()
	lo, hi := st[0].Sub(rec.Sent), st[1].Sub(rec.Sent)
	if ttfb < 38*time.Millisecond || ttfb < lo-time.Millisecond || ttfb > hi+20*time.Millisecond {
		t.Errorf("time to first byte %v, want within the server's flush (%v…%v, −1 ms…+20 ms), at least 38 ms", ttfb, lo, hi)
	}
	lo, hi = st[2].Sub(rec.Sent), st[3].Sub(rec.Sent)
	if e2e := rec.E2E(); e2e < 98*time.Millisecond || e2e < lo-time.Millisecond || e2e > hi+30*time.Millisecond {
		t.Errorf("E2E %v, want within the server's last write (%v…%v, −1 ms…+30 ms), at least 98 ms", e2e, lo, hi)
	}
}

func TestErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/429":
			w.WriteHeader(429)
		case "/503":
			w.WriteHeader(503)
		case "/hang":
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	c, _ := New(Config{BaseURL: srv.URL, FastHTTP: forceFastHTTP})
	if rec := do(t, c, context.Background(), &workload.Request{Path: "/429"}); rec.Err != record.RateLimited {
		t.Errorf("429: %q", rec.Err)
	}
	if rec := do(t, c, context.Background(), &workload.Request{Path: "/503"}); rec.Err != "http_503" {
		t.Errorf("503: %q", rec.Err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	t0 := time.Now()
	if rec := do(t, c, ctx, &workload.Request{Path: "/hang"}); rec.Err != record.Cancelled || time.Since(t0) > 2*time.Second {
		t.Errorf("cancel: %q after %v", rec.Err, time.Since(t0))
	}
	short, _ := New(Config{BaseURL: srv.URL, Timeout: 100 * time.Millisecond, FastHTTP: forceFastHTTP})
	if rec := do(t, short, context.Background(), &workload.Request{Path: "/hang"}); rec.Err != record.Timeout {
		t.Errorf("timeout: %q %s", rec.Err, rec.ErrMsg)
	}
	if _, err := New(Config{BaseURL: "ftp://x"}); err == nil || !strings.Contains(err.Error(), "http") {
		t.Errorf("bad URL accepted: %v", err)
	}
}

func TestTraceHeader(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("traceparent")
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, TraceHeader: true, FastHTTP: forceFastHTTP})
	if err != nil {
		t.Fatal(err)
	}
	rec := do(t, c, context.Background(), &workload.Request{Path: "/"})
	if h := <-got; rec.Failed() || h == "" || h != record.TraceParent(rec.TraceID, rec.SpanID) {
		t.Fatalf("traceparent %q, record trace %x/%x (%s)", h, rec.TraceID, rec.SpanID, rec.ErrMsg)
	}
}

// TestTargetWithQuery: a target with a query string gets the request's
// path before it (it was appended after the query).
func TestTargetWithQuery(t *testing.T) {
	uri := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { uri <- r.URL.RequestURI() }))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/api?key=k1"})
	if err != nil {
		t.Fatal(err)
	}
	if rec := do(t, c, context.Background(), &workload.Request{Path: "/search?q=a"}); rec.Failed() {
		t.Fatalf("%s %s", rec.Err, rec.ErrMsg)
	}
	if got := <-uri; got != "/api/search?key=k1&q=a" {
		t.Fatalf("request URI %q", got)
	}
}

// TestHeaderInjection: a header value with a CR or LF (which the reactor
// would write as it is, splitting the request) is refused.
func TestHeaderInjection(t *testing.T) {
	if _, err := New(Config{BaseURL: "http://127.0.0.1:1", Headers: http.Header{"X-A": {"v\r\nX-Evil: 1"}}}); err == nil || !strings.Contains(err.Error(), "one line") {
		t.Fatalf("err %v", err)
	}
}
