package sim

import (
	"fmt"
	"math"
)

// How deterministic mode writes streamed tokens. A stream whose connection
// the simulator can reach (Serve, or ConnContext on your own http.Server;
// plain HTTP/1.1 over TCP) is written by its clock straight to the socket:
// every token due in one tick, across all such streams, is framed exactly as
// net/http would frame it and handed to the kernel in one batch — one
// io_uring submission where the kernel allows it, else one send(2) per
// stream. Other streams are written through their ResponseWriter, one write
// and flush per token (the portable path).

// Write paths, the values of Config.WritePath.
const (
	// WritePathAuto picks io_uring, else send(2), for streams whose socket
	// is reachable, and the ResponseWriter for the others.
	WritePathAuto = "auto"
	// WritePathURing requires io_uring batches (New fails without it).
	WritePathURing = "uring"
	// WritePathSend writes to sockets with one send(2) per stream and tick.
	WritePathSend = "send"
	// WritePathHTTP always writes through the ResponseWriter.
	WritePathHTTP = "http"
)

// validWritePath reports whether p is a known write path ("" is auto).
func validWritePath(p string) error {
	switch p {
	case "", WritePathAuto, WritePathURing, WritePathSend, WritePathHTTP:
		return nil
	}
	return fmt.Errorf("Config.WritePath must be one of %q, %q, %q, %q, got %q", WritePathAuto, WritePathURing, WritePathSend, WritePathHTTP, p)
}

// resWouldBlock is a sendOp result: the socket took nothing (EAGAIN).
const resWouldBlock = math.MinInt32

// sendOp is one write of a batch: b to the socket of handle fd (see
// sender.hold). res is set by the sender:
// the number of bytes the socket took, resWouldBlock, or -errno.
type sendOp struct {
	fd  int
	b   []byte
	res int32
}

// sender writes a batch of sendOps, in order, without blocking.
type sender interface {
	// hold takes a reference to socket fd that survives net/http closing
	// the descriptor (so that a write never reaches a descriptor number the
	// process has reused), and returns the handle its ops name the socket
	// by. It may be called from any goroutine, with fd valid for the call.
	hold(fd int) (int, error)
	// release drops a handle from hold.
	release(h int)
	sendAll(ops []sendOp)
	close()
	// name is the write path it implements (WritePathURing or WritePathSend).
	name() string
}
