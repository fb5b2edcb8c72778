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

// directSocket returns a handle on r's socket from hold (see sender.hold)
// when the response body may be written to it directly, or -1. That needs
// net/http's own HTTP/1.1 ResponseWriter (chunked framing, no wrapper that
// would transform the bytes), no TLS, and the connection from ConnContext.
func directSocket(r *http.Request, w http.ResponseWriter, hold func(int) (int, error)) int {
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
	h := -1
	// Control holds the descriptor open while it is taken hold of.
	_ = rc.Control(func(s uintptr) {
		if d, err := hold(int(s)); err == nil {
			h = d
		}
	})
	return h
}
