package plainhttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
)

// forceFastHTTP makes the tests' clients use fasthttp (see
// TestFastHTTPPath); tests do not run in parallel.
var forceFastHTTP bool

// TestFastHTTPPath runs the client tests again on the fasthttp path, which
// serves where the reactor cannot (not Linux, https).
func TestFastHTTPPath(t *testing.T) {
	forceFastHTTP = true
	defer func() { forceFastHTTP = false }()
	for _, tc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"ttfb and end", TestTimeToFirstByteAndEnd},
		{"errors", TestErrors},
		{"trace header", TestTraceHeader},
		{"end is the last read", TestEndIsTheLastRead},
	} {
		t.Run(tc.name, tc.fn)
	}
}

func TestReactorPathInUse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/x" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/api/"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if (c.raw != nil) != rawhttp.Available() {
		t.Fatalf("reactor path %v, available %v", c.raw != nil, rawhttp.Available())
	}
	for _, path := range []string{"/x", "/x"} {
		rec := &record.Record{}
		rec.Reset()
		rec.Sent = time.Now()
		c.Do(context.Background(), &workload.Request{Path: path}, rec)
		if rec.Failed() || rec.Status != 200 || rec.FirstToken.IsZero() || rec.End.Before(rec.FirstToken) {
			t.Fatalf("%s: %+v", path, rec)
		}
	}
}

// TestEndIsTheLastRead: E2E ends when the response's last bytes came (the
// kernel's receive time of its last read), not when a late reader read
// them or its sender was woken. Every read here is held 80 ms after its
// wake-up (the reactor's for http://, the stamped connection's under
// fasthttp for https:// or with FastHTTP); the server writes its body 30
// ms into the request. Without the kernel's receive stamps the late
// read's own time is the end, and E2E and the first byte carry how late
// they may be (a bound of the 80 ms), the server's write within the range.
func TestEndIsTheLastRead(t *testing.T) {
	if !rawhttp.Available() {
		t.Skip("reads are stamped on Linux only")
	}
	wrote := make(chan [2]time.Time, 1) // around the body's write
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(30 * time.Millisecond)
		w.Header().Set("Content-Length", "4")
		w0 := time.Now()
		io.WriteString(w, "done")
		w.(http.Flusher).Flush()
		wrote <- [2]time.Time{w0, time.Now()}
	})
	plain, tlsSrv := httptest.NewServer(h), httptest.NewTLSServer(h)
	defer plain.Close()
	defer tlsSrv.Close()
	for _, srv := range []*httptest.Server{plain, tlsSrv} {
		for _, kernel := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/kernel stamps %v", strings.Split(srv.URL, ":")[0], kernel), func(t *testing.T) {
				endIsTheLastRead(t, srv, kernel, wrote)
			})
		}
	}
}

// endIsTheLastRead is one case of TestEndIsTheLastRead.
func endIsTheLastRead(t *testing.T, srv *httptest.Server, kernel bool, wrote chan [2]time.Time) {
	if !kernel {
		defer rawhttp.SetNoKernelStamps()()
	}
	c, err := New(Config{BaseURL: srv.URL, FastHTTP: forceFastHTTP})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if srv.TLS != nil {
		c.fc.TLSConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	}
	if want := srv.TLS == nil && !forceFastHTTP; (c.raw != nil) != want {
		t.Fatalf("the reactor path in use: %v, want %v", c.raw != nil, want)
	}
	do(t, c, context.Background(), &workload.Request{Path: "/warm"}) // the connection, unstalled
	<-wrote
	restore := rawhttp.SetWakeStall(80 * time.Millisecond)
	rec := do(t, c, context.Background(), &workload.Request{Path: "/"})
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
	if rec.EndBound < 70*time.Millisecond || !rec.LateFirst || rec.FirstBound != rec.EndBound || rec.ReadLag < rec.EndBound {
		t.Fatalf("end bound %v, late first %v, first bound %v, read lag %v; want a bound of at least 70 ms (the 80 ms stall) on the end and the first byte alike, the read lag at least that",
			rec.EndBound, rec.LateFirst, rec.FirstBound, rec.ReadLag)
	}
	if e2e-rec.EndBound > hi+time.Millisecond || e2e < lo {
		t.Errorf("E2E %v less its bound %v, want the range to hold the server's write (%v…%v)", e2e, rec.EndBound, lo, hi)
	}
}
