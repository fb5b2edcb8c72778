package rawhttp

import (
	"bufio"
	"bytes"
	"errors"
	"net/http"
	"testing"
	"time"
)

// h2Settings is an HTTP/2 server's first frame: SETTINGS with
// MAX_CONCURRENT_STREAMS 250 and INITIAL_WINDOW_SIZE 1 MiB.
const h2Settings = "\x00\x00\x0c\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\xfa\x00\x04\x00\x10\x00\x00"

// TestHTTP2FrameFailsTheResponse: a response that begins with an HTTP/2
// server's SETTINGS or GOAWAY fails as ErrHTTP2 at once, however it is
// split (before, the parser waited for the end of headers that never
// came, and the connection's close read as a reset).
func TestHTTP2FrameFailsTheResponse(t *testing.T) {
	goAway := "\x00\x00\x08\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01"
	for _, raw := range []string{h2Settings, h2Settings + goAway, goAway, "\x00\x00\x00\x04\x00\x00\x00\x00\x00"} {
		for _, split := range []int{1, 4, 9, len(raw)} {
			var p respParser
			p.reset(false)
			var err error
			for b := []byte(raw); len(b) > 0 && err == nil; {
				k := min(split, len(b))
				_, _, err = p.feed(b[:k], Read{At: time.Now()}, &collect{})
				b = b[k:]
			}
			if !errors.Is(err, ErrHTTP2) {
				t.Errorf("%q split by %d: %v, want ErrHTTP2", raw, split, err)
			}
		}
	}
	for _, b := range []string{"HTTP/1.1 200 OK\r\n", "\x00\x00\x0c\x04\x00\x00\x00\x00\x01", "\x00\x00\x0d\x04\x00\x00\x00\x00\x00", "\x00\x00\x00\x01\x04\x00\x00\x00\x00"} {
		if IsHTTP2Frame([]byte(b)) {
			t.Errorf("%q taken for an HTTP/2 server's first frame", b)
		}
	}
}

// FuzzIsHTTP2Frame: no bytes net/http reads as an HTTP/1 response are
// taken for an HTTP/2 frame.
func FuzzIsHTTP2Frame(f *testing.F) {
	f.Add([]byte(h2Settings))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("\x00\x00\x08\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !IsHTTP2Frame(b) {
			return
		}
		if _, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(b)), nil); err == nil {
			t.Fatalf("%q: an HTTP/1 response taken for an HTTP/2 frame", b)
		}
	})
}
