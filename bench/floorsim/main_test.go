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

// TestServes runs floorsim on loopback and checks what a client sees: two
// streams on one kept-alive connection, each well framed (Go's chunked
// reader decodes it) with its tokens, usage and [DONE], the first token no
// earlier than the TTFT; then /health on the same connection; an unknown
// path gets 404; the loop stops when asked.
func TestServes(t *testing.T) {
	const (
		ttft   = 20 * time.Millisecond
		itl    = 2 * time.Millisecond
		tokens = 4
	)
	lfd, err := listen(netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(lfd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*unix.SockaddrInet4).Port)
	s, err := newServer(lfd, ttft, itl, time.Millisecond, 128)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		s.close()
	}()

	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
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
			t.Fatalf("stream %d: %v", i, err)
		}
		sc := bufio.NewScanner(resp.Body)
		var content, usage, doneEv int
		var first time.Duration
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.Contains(line, `"content":" token"`):
				if content == 0 {
					first = time.Since(sent)
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
			t.Fatalf("stream %d: reading the body: %v", i, err)
		}
		if resp.StatusCode != http.StatusOK || content != tokens || usage != 1 || doneEv != 1 {
			t.Fatalf("stream %d: status %d, %d tokens, %d usage events, %d [DONE]; want 200, %d, 1, 1", i, resp.StatusCode, content, usage, doneEv, tokens)
		}
		if first < ttft {
			t.Errorf("stream %d: first token after %v, before the TTFT %v", i, first, ttft)
		}
	}
	fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("health: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(b) != "ok" {
		t.Errorf("health: %d %q", resp.StatusCode, b)
	}

	resp, err = http.Get("http://" + addr + "/nowhere")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: %d, want 404", resp.StatusCode)
	}
}
