//go:build linux

package rawhttp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/llmtest"
)

// TestDialPhases: the reactor's dial measures the name lookup against a
// DNS server that answers 25 ms after each query (within a few ms above
// it on a loaded machine), records the connect beside it, and a request
// on the reused connection has neither (absent, not 0). Its first byte
// is the server's 30 ms wait after the request, within a few ms.
func TestDialPhases(t *testing.T) {
	const lookup, firstByte = 25 * time.Millisecond, 30 * time.Millisecond
	dns, err := llmtest.NewDNS(lookup)
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(firstByte)
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c, err := New(Config{Addr: net.JoinHostPort("phases.test", port), Resolver: dns.Resolver})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 2 {
		res, err := c.Do(context.Background(), &Request{Raw: get("/", "phases.test"), Handler: &collect{}})
		if err != nil {
			t.Fatal(err)
		}
		var ps record.Phases
		res.FillPhases(&ps)
		dnsD, hasDNS := ps.Get(record.PhaseDNS)
		_, hasConnect := ps.Get(record.PhaseConnect)
		fb, hasFB := ps.Get(record.PhaseFirstByte)
		if first := i == 0; hasDNS != first || hasConnect != first {
			t.Fatalf("request %d: dns %v, connect %v; want both %v", i, hasDNS, hasConnect, first)
		}
		if hasDNS && (dnsD < lookup || dnsD > lookup+15*time.Millisecond) {
			t.Errorf("dns %v, want %v within 15 ms above", dnsD, lookup)
		}
		if !hasFB || fb < firstByte || fb > firstByte+15*time.Millisecond {
			t.Errorf("request %d: first byte %v (%v), want %v within 15 ms above", i, fb, hasFB, firstByte)
		}
	}
}
