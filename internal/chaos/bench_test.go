package chaos

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkProxyOverhead measures one request at a time, directly and
// through the proxy with no fault applying, to a loopback upstream that
// streams 16 SSE events: the difference in time per op is what the proxy
// adds to a request's latency. Run with
//
//	go test -run '^$' -bench ProxyOverhead -benchtime 3000x ./chaos/
func BenchmarkProxyOverhead(b *testing.B) {
	var events strings.Builder
	for i := 0; i < 16; i++ {
		fmt.Fprintf(&events, "data: {\"choices\":[{\"delta\":{\"content\":\" the\"}}]}\n\n")
	}
	events.WriteString("data: [DONE]\n\n")
	body := events.String()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for _, ev := range strings.SplitAfter(body, "\n\n") {
			io.WriteString(w, ev)
			fl.Flush()
		}
	}))
	defer up.Close()
	p, err := New(up.URL)
	if err != nil {
		b.Fatal(err)
	}
	// A fault set whose rules never fire: the draws still happen.
	p.Apply(Set{Rule: Rule{ErrorRate: 0, StallRate: 0, SpikeRate: 0}, Schedule: []Rule{{From: Duration(1 << 62), ErrorRate: 1}}})
	px := httptest.NewServer(p)
	defer px.Close()
	defer p.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
	for _, c := range []struct{ name, url string }{{"direct", up.URL}, {"proxy", px.URL}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				resp, err := client.Post(c.url+"/v1/chat/completions", "application/json", strings.NewReader(`{"stream":true}`))
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if n != int64(len(body)) {
					b.Fatalf("read %d bytes, want %d", n, len(body))
				}
			}
		})
	}
}
