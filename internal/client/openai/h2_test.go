package openai

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
)

// h2OnlyServer is Go's HTTP/2 server over cleartext with prior knowledge
// and no HTTP/1.1 (http.Protocols): it resets an HTTP/1.1 request's
// connection.
func h2OnlyServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	s := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), Protocols: &p}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(ln)
	}()
	t.Cleanup(func() {
		s.Close()
		<-done
	})
	return "http://" + ln.Addr().String()
}

// TestHTTP2OnlyServer: against an HTTP/2-only server the check before a
// run fails saying the server speaks HTTP/2 only, and so does every
// request after it (bad_response), on both readers. Before, both said
// "connection reset by peer" (connect_reset), and the check "target … is
// unreachable". A request sent before any check is reset with no byte
// to tell why: it stays connect_reset (no probe is sent during a run).
func TestHTTP2OnlyServer(t *testing.T) {
	url := h2OnlyServer(t)
	for _, netHTTP := range []bool{false, true} {
		if !netHTTP && !rawhttp.Available() {
			continue
		}
		c := newClient(t, url, func(c *Config) { c.NetHTTP = netHTTP })
		before := do(c, &workload.Request{Prompt: "p", MaxTokens: 16})
		err := c.Check(t.Context())
		after := do(c, &workload.Request{Prompt: "p", MaxTokens: 16})
		c.Close()
		if before.Err != record.ConnectReset {
			t.Errorf("net/http %v: before the check %q %q, want connect_reset", netHTTP, before.Err, before.ErrMsg)
		}
		if err == nil || !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "speaks HTTP/2 only") {
			t.Errorf("net/http %v: check: %v, want that the server speaks HTTP/2 only", netHTTP, err)
		}
		if after.Err != record.BadResponse || !strings.Contains(after.ErrMsg, "speaks HTTP/2 only") {
			t.Errorf("net/http %v: after the check %q %q, want bad_response: speaks HTTP/2 only", netHTTP, after.Err, after.ErrMsg)
		}
	}
}

// TestSpeaksHTTP2 tells an HTTP/2-only server from an HTTP/1.1 one and
// from one that resets every connection.
func TestSpeaksHTTP2(t *testing.T) {
	h1 := replay(t, sseWith("data: [DONE]\n\n"))
	for _, tc := range []struct {
		url  string
		want bool
	}{{h2OnlyServer(t), true}, {h1, false}} {
		addr := strings.TrimPrefix(tc.url, "http://")
		if got := rawhttp.SpeaksHTTP2(t.Context(), addr, h2ProbeTimeout); got != tc.want {
			t.Errorf("%s: speaks HTTP/2 %v, want %v", tc.url, got, tc.want)
		}
	}
}
