package rawhttp

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// StampedConn is a TCP connection whose reads are stamped (see StampDial):
// each read that delivers bytes is kept as a Read, its At the kernel's
// receive time of its last byte where the socket gives one (else the
// read's own time), its Bound how much earlier its first bytes may have
// come: since the connection last saw its socket empty (a read that did
// not fill its buffer, or one that found nothing and waited; see stamp
// for why not the first byte's receive time). A TLS connection's or
// net/http's buffers above it can only hand bytes on later, never
// earlier, so an event the reader above completes after a read arrived no
// later than that read's At and no earlier than its Bound before At.
//
// Its methods are safe for concurrent use: net/http reads a response's
// headers on its own goroutine and the body on the caller's.
type StampedConn struct {
	tc *net.TCPConn
	rc syscall.RawConn

	mu sync.Mutex
	// oob receives the read's control messages (the receive time).
	oob [64]byte
	// n counts the reads that delivered bytes; last is the latest.
	n    int
	last Read
	// drained is when the socket was last seen empty; parked says the
	// last read found nothing and waited.
	drained time.Time
	parked  bool
	// lag is the largest read lag since the last write (see Lag).
	lag time.Duration
}

var _ net.Conn = (*StampedConn)(nil)

// newStampedConn wraps tc, asking the kernel for each read's receive time.
func newStampedConn(tc *net.TCPConn) (*StampedConn, error) {
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	if !noKernelStamps.Load() {
		if err := rc.Control(func(fd uintptr) { enableStamps(int(fd)) }); err != nil {
			return nil, err
		}
	}
	// Nothing of the connection's can have arrived before it existed.
	return &StampedConn{tc: tc, rc: rc, drained: time.Now()}, nil
}

// Read reads into p with recvmsg(2), waiting in the runtime's poller as
// net.Conn's Read does, and stamps what it read.
func (c *StampedConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var rerr error
	err := c.rc.Read(func(fd uintptr) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.parked {
			if d := wakeStall.Load(); d > 0 {
				time.Sleep(time.Duration(d)) // a test's late wake-up (SetWakeStall)
			}
		}
		t0 := time.Now()
		var last int64
		var e syscall.Errno
		n, last, e = recv(int(fd), p, c.oob[:])
		switch {
		case e == unix.EAGAIN:
			// Empty when the call began: what comes next is newer.
			c.drained, c.parked = t0, true
			return false // wait until the socket is readable
		case e != 0:
			n, rerr = 0, os.NewSyscallError("recvmsg", e)
			return true
		case n == 0:
			rerr = io.EOF
			return true
		}
		c.parked = false
		c.stamp(last, n < len(p), t0, time.Now())
		if raceBuild {
			// What a peer wrote before its write happened before this
			// read, as syscall.Read tells the race detector (net.Conn's
			// Read does; a raw recvmsg does not): a read of no bytes.
			_, _ = syscall.Read(int(fd), p[:0])
		}
		return true
	})
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err
		}
		rerr = err
	}
	if rerr != nil && rerr != io.EOF {
		rerr = &net.OpError{Op: "read", Net: "tcp", Source: c.tc.LocalAddr(), Addr: c.tc.RemoteAddr(), Err: rerr}
	}
	return n, rerr
}

// stamp keeps a read whose last byte the kernel received at last (Unix
// nanoseconds; 0: no receive time), which returned at at; drained says it
// emptied the socket, as its call began at t0. c.mu is held.
//
// A read's Bound reaches back to when the socket was last seen empty,
// with the kernel's receive times too: bytes that waited in the socket
// may carry a later receive time than their own, as the kernel merges a
// small segment into the one before it while neither is read, and the
// merged one keeps the later time (two writes 6 ms apart on a new
// connection, sent as two segments 6 ms apart, read together: every byte
// stamped with the second; TestStampedConnMergedSegments). Only the last
// byte's time is its own.
func (c *StampedConn) stamp(last int64, drained bool, t0, at time.Time) {
	c.n++
	rd := Read{At: at, Bound: at.Sub(c.drained), N: c.n}
	lag := rd.Bound
	if w := at.UnixNano() - last; last > 0 && w >= 0 && w < int64(10*time.Second) {
		// The kernel's receive time, on the monotonic clock (as the
		// reactor takes it: a wall-clock step shows as a wait out of range).
		rd.At, rd.Kernel, lag = at.Add(-time.Duration(w)), true, time.Duration(w)
		rd.Bound = max(rd.At.Sub(c.drained), 0)
	}
	c.last, c.lag = rd, max(c.lag, lag)
	if drained {
		c.drained = t0 // empty when that call began: what comes next is newer
	}
}

// recv is recvStamped that retries a call a signal interrupted.
func recv(fd int, p, oob []byte) (int, int64, syscall.Errno) {
	for {
		n, k, e := recvStamped(fd, p, oob)
		if e != unix.EINTR {
			return n, k, e
		}
	}
}

// recvStamped reads fd into p with recvmsg(2) as a raw system call and
// returns the kernel's receive time of the last byte read (Unix
// nanoseconds), or 0 when the socket gave none.
func recvStamped(fd int, p, oob []byte) (int, int64, syscall.Errno) {
	iov := unix.Iovec{Base: &p[0]}
	iov.SetLen(len(p))
	msg := unix.Msghdr{Iov: &iov, Control: &oob[0]}
	msg.SetIovlen(1)
	msg.SetControllen(len(oob))
	n, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), 0)
	if e != 0 {
		return 0, 0, e
	}
	return int(n), stampOf(oob[:msg.Controllen]), 0
}

// Last returns the connection's latest read that delivered bytes.
func (c *StampedConn) Last() Read {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// Lag returns the largest read lag since the connection last wrote (the
// reads of the response to the request it wrote last: HTTP/1.1 answers
// a request after it): for a read with the kernel's receive time, how
// long after it the read returned; for one without, its Bound (as the
// reactor's Result.ReadLag).
func (c *StampedConn) Lag() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lag
}

// Write writes to the connection, and starts Lag's count anew.
func (c *StampedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.lag = 0
	c.mu.Unlock()
	return c.tc.Write(p)
}

// Close closes the connection.
func (c *StampedConn) Close() error { return c.tc.Close() }

// CloseWrite shuts down the writing side (as *net.TCPConn's).
func (c *StampedConn) CloseWrite() error { return c.tc.CloseWrite() }

// LocalAddr returns the local address.
func (c *StampedConn) LocalAddr() net.Addr { return c.tc.LocalAddr() }

// RemoteAddr returns the remote address.
func (c *StampedConn) RemoteAddr() net.Addr { return c.tc.RemoteAddr() }

// SetDeadline sets the read and write deadlines.
func (c *StampedConn) SetDeadline(t time.Time) error { return c.tc.SetDeadline(t) }

// SetReadDeadline sets the read deadline (Read's wait in the poller keeps it).
func (c *StampedConn) SetReadDeadline(t time.Time) error { return c.tc.SetReadDeadline(t) }

// SetWriteDeadline sets the write deadline.
func (c *StampedConn) SetWriteDeadline(t time.Time) error { return c.tc.SetWriteDeadline(t) }
