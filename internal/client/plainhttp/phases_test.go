package plainhttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
)

// TestHTTPPhases: --api http on the reactor records the HTTP phases
// (docs/figures.md, "HTTP phases") against a server that answers 40 ms
// after each request: the median first byte is 40 ms within a few ms, and
// only the request that opened the keep-alive connection has a connect
// phase (the others' is absent, not 0); the target is an IP address, so
// no request has a DNS phase.
func TestHTTPPhases(t *testing.T) {
	if !rawhttp.Available() || forceFastHTTP {
		t.Skip("the phases are the reactor's")
	}
	const firstByte, n = 40 * time.Millisecond, 7
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(firstByte)
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var fb []time.Duration
	conns := 0
	for range n {
		rec := do(t, c, context.Background(), &workload.Request{Path: "/"})
		if rec.Failed() {
			t.Fatalf("%s %s", rec.Err, rec.ErrMsg)
		}
		d, ok := rec.Phases.Get(record.PhaseFirstByte)
		if !ok {
			t.Fatal("no first-byte phase")
		}
		fb = append(fb, d)
		if _, ok := rec.Phases.Get(record.PhaseConnect); ok {
			conns++
		}
		if _, ok := rec.Phases.Get(record.PhaseDNS); ok {
			t.Error("a DNS phase for an IP address")
		}
		if _, ok := rec.Phases.Get(record.PhaseWrite); !ok {
			t.Error("no write phase")
		}
	}
	sort.Slice(fb, func(i, j int) bool { return fb[i] < fb[j] })
	if m := fb[n/2]; m < firstByte || m > firstByte+15*time.Millisecond {
		t.Errorf("median first byte %v, want %v within 15 ms above", m, firstByte)
	}
	if conns != 1 {
		t.Errorf("%d requests have a connect phase, want 1 (the one that opened the connection)", conns)
	}
}
