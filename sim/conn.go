package sim

import (
	"context"
	"net"
	"net/http"
	"reflect"
	"syscall"
)

// connKey is the context key of the connection a request came on.
type connKey struct{}

// ConnContext is an http.Server.ConnContext that records each connection in
// its requests' context, which lets the simulator write streamed tokens
// straight to the socket in batches (see Config.WritePath). Serve sets it;
// set it on your own http.Server to get the same path. Without it streams
// are written through the ResponseWriter.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// stdResponseWriter is the name of net/http's own HTTP/1.x ResponseWriter.
const stdResponseWriter = "*http.response"

// directSocket returns a duplicate of the descriptor of r's socket when the
// response body may be written to it directly, or -1. That needs net/http's
// own HTTP/1.1 ResponseWriter (chunked framing, no wrapper that would
// transform the bytes), no TLS, and the connection from ConnContext.
func directSocket(r *http.Request, w http.ResponseWriter) int {
	if r.ProtoMajor != 1 || r.ProtoMinor != 1 || r.TLS != nil || r.Method == http.MethodHead {
		return -1
	}
	if reflect.TypeOf(w).String() != stdResponseWriter {
		return -1
	}
	c, ok := r.Context().Value(connKey{}).(syscall.Conn)
	if !ok {
		return -1
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	// Control holds the descriptor open while the duplicate is made.
	if err := rc.Control(func(s uintptr) {
		if d, err := dupSocket(int(s)); err == nil {
			fd = d
		}
	}); err != nil && fd >= 0 {
		closeSocket(fd)
		return -1
	}
	return fd
}
