package rawhttp

import (
	"context"
	"crypto/tls"
	"net"
)

// A response read through net/http (an https:// target, a redirect, or
// SPATE_NETHTTP=1) is read by goroutines the reactor does not run, which
// stamp an event when their read returned: on a busy machine, after the
// goroutine waited for a core, unseen. A StampedConn is the TCP connection
// under such a response (under TLS, where there is one): it reads with
// recvmsg(2) and keeps each read's kernel receive time and since when its
// bytes may have waited, so that the reader above it can stamp its events
// with the time they arrived and count the ones that may be late, as the
// reactor's handler does.

// Dialer is the shape of net.Dialer.DialContext.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// StampDial returns dial with every TCP connection it opens made a
// StampedConn (see Stamp).
func StampDial(dial Dialer) Dialer {
	if !Available() {
		return dial
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return Stamp(c), nil
	}
}

// Stamp returns c as a StampedConn when it is a TCP connection on Linux,
// else c itself (a connection that cannot be wrapped still works,
// unstamped).
func Stamp(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok || !Available() {
		return c
	}
	sc, err := newStampedConn(tc)
	if err != nil {
		return c
	}
	return sc
}

// Stamped returns c's StampedConn: c itself, or the connection under a TLS
// connection c (anything with a NetConn method); nil when c's reads are not
// stamped.
func Stamped(c net.Conn) *StampedConn {
	for range 4 {
		switch v := c.(type) {
		case *StampedConn:
			return v
		case interface{ NetConn() net.Conn }:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// StampedResponses returns c's StampedConn when c carries one response at
// a time (HTTP/1.1: over HTTP/2 a connection's reads are every stream's),
// nil otherwise, and whether c is TLS (where a body read hands on at most
// one record: one write of the server's).
func StampedResponses(c net.Conn) (sc *StampedConn, records bool) {
	tc, ok := c.(*tls.Conn)
	if ok && tc.ConnectionState().NegotiatedProtocol == "h2" {
		return nil, true
	}
	return Stamped(c), ok
}
