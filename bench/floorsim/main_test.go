//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseRequest(t *testing.T) {
	body := `{"model":"m","max_tokens":7,"stream":true,"stream_options":{"include_usage":true}}`
	whole := fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\ncontent-LENGTH: %d\r\n\r\n%s", len(body), body)
	tests := []struct {
		name      string
		in        string
		size      int // 0: not whole yet
		wantErr   bool
		maxTokens int
		usage     bool
	}{
		{"whole", whole, len(whole), false, 7, true},
		{"whole and the next", whole + "GET /health HTTP/1.1\r\n", len(whole), false, 7, true},
		{"body short", whole[:len(whole)-1], 0, false, 0, false},
		{"header short", "GET /health HTTP/1.1\r\nHost: x\r\n", 0, false, 0, false},
		{"no body", "GET /health HTTP/1.1\r\n\r\n", 24, false, 0, false},
		{"no max_tokens", "POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 40, false, 0, false},
		{"bad length", "POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 0, true, 0, false},
		{"huge length", "POST / HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n", 0, true, 0, false},
		{"no request line", "\r\n\r\n", 0, true, 0, false},
		{"header too long", strings.Repeat("a", 70<<10), 0, true, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, size, err := parseRequest([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if size != tt.size || r.maxTokens != tt.maxTokens || r.usage != tt.usage {
				t.Errorf("size %d max_tokens %d usage %v, want %d %d %v", size, r.maxTokens, r.usage, tt.size, tt.maxTokens, tt.usage)
			}
		})
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte("POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 15\r\n\r\n{\"max_tokens\":3}"))
	f.Add([]byte("GET /health HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, size, err := parseRequest(b)
		if err != nil {
			return
		}
		if size < 0 || size > len(b) {
			t.Fatalf("size %d of %d bytes", size, len(b))
		}
		if size > 0 && (r.method == "" || r.path == "" || !bytes.Contains(b[:size], headerEnd)) {
			t.Fatalf("a whole request without a request line or header end: %q", b[:size])
		}
		if r.maxTokens < 0 {
			t.Fatalf("max_tokens %d", r.maxTokens)
		}
	})
}

// TestServes runs floorsim on loopback and checks what clients see: on
// each of three connections at once, two streams one after the other on the
// kept-alive connection, each well framed (Go's chunked reader decodes it)
// with its tokens, usage and [DONE], no token before its exact time (TTFT
// plus its ITLs, from before the request was written); then /health on a
// connection that streamed, and 404 for an unknown path. With an ITL
// shorter than the tick, the tokens due in one tick leave together. After
// the loop stops: no wake-up of the alarm found nothing to send.
func TestServes(t *testing.T) {
	for _, tc := range []struct {
		name            string
		ttft, itl, tick time.Duration
		tokens          int
	}{
		{"itl-over-tick", 20 * time.Millisecond, 2 * time.Millisecond, time.Millisecond, 4},
		{"itl-under-tick", 20 * time.Millisecond, 300 * time.Microsecond, 2 * time.Millisecond, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lfd, err := listen(netip.MustParseAddrPort("127.0.0.1:0"))
			if err != nil {
				t.Fatal(err)
			}
			sa, err := unix.Getsockname(lfd)
			if err != nil {
				t.Fatal(err)
			}
			addr := fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port)
			s, err := newServer(lfd, tc.ttft, tc.itl, tc.tick, 128)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.run(ctx) }()
			stopped := false
			stop := func() {
				if stopped {
					return
				}
				stopped = true
				cancel()
				if err := <-done; err != nil {
					t.Errorf("run: %v", err)
				}
				s.close()
			}
			defer stop()

			var wg sync.WaitGroup
			errs := make(chan error, 3)
			for range 3 {
				wg.Go(func() { errs <- streams(addr, tc.ttft, tc.itl, tc.tokens) })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}

			resp, err := http.Get("http://" + addr + "/nowhere")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("unknown path: %d, want 404", resp.StatusCode)
			}
			stop()
			if s.emptyTicks != 0 {
				t.Errorf("%d wake-ups of the alarm found nothing to send", s.emptyTicks)
			}
		})
	}
}

// streams runs two streams one after the other on one connection to addr,
// then /health on it, and checks each answer (see TestServes).
func streams(addr string, ttft, itl time.Duration, tokens int) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	body := fmt.Sprintf(`{"model":"m","messages":[{"role":"user","content":"Hi."}],"max_tokens":%d,"stream":true,"stream_options":{"include_usage":true}}`, tokens)
	for i := range 2 {
		sent := time.Now()
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return fmt.Errorf("stream %d: %w", i, err)
		}
		sc := bufio.NewScanner(resp.Body)
		var content, usage, doneEv int
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.Contains(line, `"content":" token"`):
				// Never before its exact time: TTFT plus its ITLs.
				if at, due := time.Since(sent), ttft+time.Duration(content)*itl; at < due {
					resp.Body.Close()
					return fmt.Errorf("stream %d: token %d after %v, before its time %v", i, content, at, due)
				}
				content++
			case strings.Contains(line, `"usage":`):
				usage++
			case line == "data: [DONE]":
				doneEv++
			}
		}
		resp.Body.Close()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("stream %d: reading the body: %w", i, err)
		}
		if resp.StatusCode != http.StatusOK || content != tokens || usage != 1 || doneEv != 1 {
			return fmt.Errorf("stream %d: status %d, %d tokens, %d usage events, %d [DONE]; want 200, %d, 1, 1", i, resp.StatusCode, content, usage, doneEv, tokens)
		}
	}
	fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "ok" {
		return fmt.Errorf("health: %d %q", resp.StatusCode, b)
	}
	return nil
}
