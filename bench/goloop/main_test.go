//go:build linux

package main

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestWhole(t *testing.T) {
	tests := []struct {
		resp string
		want bool
	}{
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", true},
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nh", false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", false},
		{"HTTP/1.1 204 No Content\r\nDate: x\r\n\r\n", true},
		{"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\nhi", false},
	}
	for _, tt := range tests {
		if got := whole([]byte(tt.resp)); got != tt.want {
			t.Errorf("whole(%q) = %v, want %v", tt.resp, got, tt.want)
		}
	}
}

// TestShapes runs each shape for a moment against a loopback server and
// checks that every request it counts the server answered, and no more:
// each loop stops by itself, having read every response it asked for.
func TestShapes(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Length", "2")
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	req := []byte("GET / HTTP/1.1\r\nHost: " + ap.String() + "\r\n\r\n")
	for name, sh := range map[string]shape{
		"wrk":      {hold: true, clocks: 6, figures: 11},
		"nohold":   {clocks: 1, figures: 1},
		"handoff":  {handoff: true, clocks: 6, figures: 11},
		"batchrec": {hold: true, batchrec: true, clocks: 6, figures: 11},
		"coro":     {hold: true, coro: true, clocks: 6, figures: 11},
	} {
		t.Run(name, func(t *testing.T) {
			before := served.Load()
			done, failed := loop(sa, req, 4, time.Now().Add(200*time.Millisecond), sh)
			if failed != 0 || done == 0 {
				t.Fatalf("done %d failed %d, want some done and none failed", done, failed)
			}
			if got := served.Load() - before; got != done {
				t.Errorf("the server answered %d requests, the loop counted %d", got, done)
			}
		})
	}
}
