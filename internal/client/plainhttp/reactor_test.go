package plainhttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
// kernel's receive time of its last read), not when a late reactor read
// them or its sender was woken. The reactor here is held 80 ms after
// every wake-up; the server writes its body 30 ms into the request.
// Without the kernel's receive stamps the late read's own time is the end,
// and E2E and the first byte carry how late they may be (a bound of the
// 80 ms), the server's write within the range.
func TestEndIsTheLastRead(t *testing.T) {
	if !rawhttp.Available() || forceFastHTTP {
		t.Skip("the reactor path is not in use")
	}
	wrote := make(chan [2]time.Time, 1) // around the body's write
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(30 * time.Millisecond)
		w.Header().Set("Content-Length", "4")
		w0 := time.Now()
		io.WriteString(w, "done")
		w.(http.Flusher).Flush()
		wrote <- [2]time.Time{w0, time.Now()}
	}))
	defer srv.Close()
	for _, kernel := range []bool{true, false} {
		t.Run(fmt.Sprintf("kernel stamps %v", kernel), func(t *testing.T) {
			if !kernel {
				defer rawhttp.SetNoKernelStamps()()
			}
			c, err := New(Config{BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
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
					t.Errorf("E2E %v, want within the server's write (%v…%v, −1 ms…+20 ms): the reactor read it 80 ms late", e2e, lo, hi)
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
		})
	}
}
