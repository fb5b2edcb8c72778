//go:build linux

package sim

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newSender returns the socket writer for path: io_uring batches or one
// send(2) per op. WritePathHTTP has none (nil). Auto falls back from io_uring
// to send(2) when the kernel refuses io_uring.
func newSender(path string) (sender, error) {
	switch path {
	case WritePathHTTP:
		return nil, nil
	case WritePathSend:
		return sendSender{}, nil
	}
	r, err := newURing()
	if err != nil {
		if path == WritePathURing {
			return nil, fmt.Errorf("Config.WritePath %q: %w", path, err)
		}
		return sendSender{}, nil
	}
	return (*uringSender)(r), nil
}

// uringSender submits each batch to an io_uring. Sockets are held as
// registered ("fixed") files where the kernel allows it, which costs no
// descriptor (10,000 streams would otherwise need 20,000), else duplicated.
type uringSender uring

func (u *uringSender) hold(fd int) (int, error) {
	if f := (*uring)(u).files; f != nil {
		return f.Put(fd)
	}
	return dupSocket(fd)
}

func (u *uringSender) release(h int) {
	if f := (*uring)(u).files; f != nil {
		f.Remove(h)
		return
	}
	closeSocket(h)
}

func (u *uringSender) sendAll(ops []sendOp) {
	(*uring)(u).sendAll(ops)
	for i := range ops {
		if ops[i].res == -int32(unix.EAGAIN) {
			ops[i].res = resWouldBlock
		}
	}
}
func (u *uringSender) close()       { (*uring)(u).Close() }
func (u *uringSender) name() string { return WritePathURing }

// sendSender writes each op with its own send(2); it holds sockets by
// duplicating their descriptors.
type sendSender struct{}

func (sendSender) hold(fd int) (int, error) { return dupSocket(fd) }
func (sendSender) release(h int)            { closeSocket(h) }
func (sendSender) sendAll(ops []sendOp)     { sendEach(ops) }
func (sendSender) close()                   {}
func (sendSender) name() string             { return WritePathSend }

// sendEach writes each op with send(2), MSG_DONTWAIT (the socket may be
// full: the op then reports resWouldBlock) and MSG_NOSIGNAL. It is a raw
// system call: a non-blocking send never sleeps, so the scheduler need not
// hand the processor over.
func sendEach(ops []sendOp) {
	for i := range ops {
		op := &ops[i]
		if len(op.b) == 0 {
			op.res = 0
			continue
		}
		for {
			n, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(op.fd), uintptr(unsafe.Pointer(unsafe.SliceData(op.b))), uintptr(len(op.b)), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
			switch {
			case errno == unix.EINTR:
				continue
			case errno == unix.EAGAIN:
				op.res = resWouldBlock
			case errno != 0:
				op.res = -int32(errno)
			default:
				op.res = int32(n)
			}
			break
		}
	}
}

// dupSocket duplicates a socket descriptor (close-on-exec), so that the
// clock's writes never reach a descriptor number that net/http closed and
// the process reused; the socket stays open until both are closed.
func dupSocket(fd int) (int, error) {
	d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("duplicating socket %d: %w", fd, err)
	}
	return d, nil
}

// closeSocket closes a descriptor from dupSocket.
func closeSocket(fd int) {
	if err := unix.Close(fd); err != nil && !errors.Is(err, unix.EINTR) {
		_ = err // nothing to do: the descriptor is gone either way
	}
}
