package rawhttp

import (
	"context"
	"errors"
	"io"
	"net"
	"time"
)

// ErrHTTP2 is a response that began with an HTTP/2 frame where an
// HTTP/1.1 status line was due: the server speaks HTTP/2 only (over
// cleartext, with prior knowledge), and answered spate's HTTP/1.1 request
// with its connection preface.
var ErrHTTP2 = errors.New("the server answered with an HTTP/2 frame, not an HTTP/1.1 response")

// HTTP/2 frame types a server's first frame can be (RFC 9113 §6).
const (
	frameSettings = 0x4
	frameGoAway   = 0x7
)

// IsHTTP2Frame reports whether b begins with a frame a server sends first
// on an HTTP/2 connection: its SETTINGS (the server's connection
// preface), or a GOAWAY refusing the connection, on stream 0. An HTTP/1
// response ("HTTP/1.1 …") never does.
func IsHTTP2Frame(b []byte) bool {
	if len(b) < 9 {
		return false
	}
	n := int(b[0])<<16 | int(b[1])<<8 | int(b[2])
	stream := (uint32(b[5])<<24 | uint32(b[6])<<16 | uint32(b[7])<<8 | uint32(b[8])) &^ (1 << 31)
	if stream != 0 || n > 1<<14 {
		return false
	}
	switch b[3] {
	case frameSettings:
		return n%6 == 0 && b[4]&^1 == 0 && (b[4] == 0 || n == 0)
	case frameGoAway:
		return n >= 8 && b[4] == 0
	}
	return false
}

// clientPreface is HTTP/2's client connection preface (RFC 9113 §3.4)
// followed by an empty SETTINGS frame.
var clientPreface = []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")

// SpeaksHTTP2 reports whether the server at addr (host:port) answers
// HTTP/2's connection preface over cleartext (prior knowledge) with its
// own: it opens one connection, sends the preface and reads the first
// frame, within timeout. A server that speaks HTTP/1.1 only answers with
// an error or closes: false.
func SpeaksHTTP2(ctx context.Context, addr string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer nc.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	if _, err := nc.Write(clientPreface); err != nil {
		return false
	}
	var b [9]byte
	if _, err := io.ReadFull(nc, b[:]); err != nil {
		return false
	}
	return b[3] == frameSettings && IsHTTP2Frame(b[:])
}
