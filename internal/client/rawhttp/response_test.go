package rawhttp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// collect is a Handler that keeps what it is given.
type collect struct {
	status int
	body   []byte
	stamps []time.Time
	kernel []bool
	reads  []Read // each Body call's
}

func (c *collect) Header(status int, rd Read) error { c.status = status; return nil }
func (c *collect) Body(p []byte, rd Read) error {
	c.body = append(c.body, p...)
	c.stamps = append(c.stamps, rd.At)
	c.kernel = append(c.kernel, rd.Kernel)
	c.reads = append(c.reads, rd)
	return nil
}

// feedSplit feeds resp to a parser in pieces of the given sizes (cycled),
// then the connection's end if it is not done.
func feedSplit(resp []byte, sizes []byte, head bool) (*collect, bool, bool, error) {
	var p respParser
	p.reset(head)
	h := &collect{}
	i := 0
	for len(resp) > 0 {
		n := len(resp)
		if len(sizes) > 0 {
			n = min(int(sizes[i%len(sizes)])%97+1, len(resp))
			i++
		}
		used, done, err := p.feed(resp[:n], Read{At: time.Unix(int64(i), 0)}, h)
		if err != nil {
			return h, false, false, err
		}
		if done {
			return h, true, p.keepAlive && used == n && n == len(resp), nil
		}
		resp = resp[n:]
	}
	err := p.eof()
	return h, err == nil, false, err
}

func TestResponseParser(t *testing.T) {
	tests := []struct {
		name      string
		resp      string
		head      bool
		status    int
		body      string
		keepAlive bool
		err       error
	}{
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n", false, 200, "hello world", true, nil},
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false, 200, "hello", true, nil},
		{"close-delimited", "HTTP/1.1 200 OK\r\n\r\nhello", false, 200, "hello", false, nil},
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi", false, 200, "hi", false, nil},
		{"http/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi", false, 200, "hi", false, nil},
		{"http/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi", false, 200, "hi", true, nil},
		{"interim 100", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx", false, 201, "x", true, nil},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\n", false, 204, "", true, nil},
		{"head", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", true, 200, "", true, nil},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 2\n\nhi", false, 200, "hi", true, nil},
		{"empty length", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, 200, "", true, nil},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nhi", false, 200, "hi", false, io.ErrUnexpectedEOF},
		{"short chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", false, 200, "hel", false, io.ErrUnexpectedEOF},
		{"nothing", "", false, 0, "", false, io.EOF},
		{"bad status", "HTTX/1.1 200 OK\r\n\r\n", false, 0, "", false, ErrMalformed},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, 200, "", false, ErrMalformed},
		{"gzip encoding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", false, 0, "", false, ErrMalformed},
		// Header names fold as bytes.EqualFold has them, Unicode and all
		// (ſ folds to s: a name a byte longer than it reads).
		{"folded name", "HTTP/1.1 200 OK\r\nTRANſFER-encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n", false, 200, "hi", true, nil},
		{"mixed line ends", "HTTP/1.1 200 OK\r\ncontent-length: 2\n\r\nhi", false, 200, "hi", true, nil},
		{"conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", false, 0, "", false, ErrMalformed},
	}
	for _, tt := range tests {
		for _, sizes := range [][]byte{nil, {0}, {3, 10, 1}} {
			h, _, keep, err := feedSplit([]byte(tt.resp), sizes, tt.head)
			if !errors.Is(err, tt.err) && !(tt.err == nil && err == nil) {
				t.Errorf("%s %v: error %v, want %v", tt.name, sizes, err, tt.err)
				continue
			}
			if h.status != tt.status || string(h.body) != tt.body {
				t.Errorf("%s %v: status %d body %q, want %d %q", tt.name, sizes, h.status, h.body, tt.status, tt.body)
			}
			if tt.err == nil && keep != tt.keepAlive {
				t.Errorf("%s %v: keep-alive %v, want %v", tt.name, sizes, keep, tt.keepAlive)
			}
		}
	}
}

// FuzzResponseParser checks the parser against net/http's on any bytes,
// however they are split: when net/http reads a response whole, the parser
// gives the same status and body.
func FuzzResponseParser(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"), []byte{1, 2})
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), []byte{4})
	f.Add([]byte("HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno!"), []byte{0})
	// A complete response, then bytes nobody asked for.
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello\r\n"), []byte{0})
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"), []byte{7})
	// Streams recorded byte for byte from real servers (llama.cpp's
	// llama-server b4747, llm-d-inference-sim v0.10.2), the first with a
	// stray CRLF after it.
	for i, name := range []string{"llama.cpp-b4747-chat-stream", "llm-d-inference-sim-v0.10.2-completions-stream"} {
		b, err := os.ReadFile(filepath.Join("testdata", "real-servers", name+".response"))
		if err != nil {
			f.Fatal(err)
		}
		if i == 0 {
			b = append(b, "\r\n"...)
		}
		f.Add(b, []byte{13, 200, 5})
	}
	f.Fuzz(func(t *testing.T, raw, sizes []byte) {
		h, complete, _, err := feedSplit(raw, sizes, false)
		resp, rerr := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
		if rerr != nil {
			return // net/http rejects it: the parser may do anything but panic
		}
		body, berr := io.ReadAll(resp.Body)
		if berr != nil || err != nil || !complete {
			return
		}
		if resp.StatusCode != h.status || !bytes.Equal(body, h.body) {
			t.Fatalf("net/http: %d %q; parser: %d %q", resp.StatusCode, body, h.status, h.body)
		}
	})
}
