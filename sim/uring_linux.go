//go:build linux

package sim

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"

	iouring "github.com/spate-dev/spate/internal/uring"
)

// A minimal io_uring (Linux ≥ 5.6) that submits a batch of socket sends with
// one io_uring_enter(2): the clock's way of writing every token due in one
// tick to many connections for the price of one system call entry. Only
// IORING_OP_SEND with MSG_DONTWAIT is used, so every send completes inline
// during the submission (or fails with EAGAIN) and no kernel worker ever
// holds a buffer after the call returns.

const (
	uringEntries  = 512
	uringMaxFixed = 1 << 16
)

// uring is one submission/completion ring pair and the table of files the
// streams' sockets are held in (nil: an old kernel; sockets are then held
// by duplicated descriptors). It is not safe for concurrent use: one clock
// goroutine owns it (the table has its own lock).
type uring struct {
	*iouring.Ring
	files *iouring.FileTable
}

// newURing sets up a ring, or reports why io_uring cannot be used here
// (kernel too old, disabled by kernel.io_uring_disabled, or refused by a
// seccomp filter, as in many containers).
func newURing() (*uring, error) {
	ring, err := iouring.New(uringEntries, iouring.SetupSubmitAll, 0)
	if errors.Is(err, unix.EINVAL) {
		ring, err = iouring.New(uringEntries, 0, 0)
	}
	if err != nil {
		return nil, err
	}
	r := &uring{Ring: ring}
	if err := r.Supports(iouring.OpSend); err != nil {
		r.Close()
		return nil, err
	}
	r.files, _ = r.NewFileTable(uringMaxFixed) // none: duplicated descriptors
	return r, nil
}

// sendAll sends each op's bytes on its socket, ring-sized chunks at a time,
// one io_uring_enter per chunk, and stores each result (bytes sent, or
// -errno) in op.res.
func (r *uring) sendAll(ops []sendOp) {
	for len(ops) > 0 {
		n := min(len(ops), int(r.Entries()))
		r.sendChunk(ops[:n])
		ops = ops[n:]
	}
}

func (r *uring) sendChunk(ops []sendOp) {
	first := r.SQTail()
	tail := first
	for i := range ops {
		op := &ops[i]
		if len(op.b) == 0 {
			op.res = 0
			continue
		}
		op.res = -int32(unix.ECANCELED)
		var flags uint8
		if r.files != nil {
			flags = iouring.FlagFixedFile
		}
		*r.SQE(tail) = iouring.SQE{
			Opcode:   iouring.OpSend,
			Flags:    flags,
			Fd:       int32(op.fd),
			Addr:     uint64(uintptr(unsafe.Pointer(unsafe.SliceData(op.b)))),
			Len:      uint32(len(op.b)),
			OpFlags:  unix.MSG_DONTWAIT | unix.MSG_NOSIGNAL,
			UserData: uint64(i),
		}
		tail++
	}
	r.SetSQTail(tail)
	want := int(tail - first)
	submitted := 0
	for submitted < want {
		// Non-blocking sends complete during the submission, so this call
		// does not sleep; it is a raw system call to spare the scheduler
		// hand-off of a blocking one.
		n, err := r.Submit()
		if err != nil || n == 0 {
			// A ring-level failure: withdraw the entries the kernel has not
			// taken, so that it never reads their buffers later, and send
			// those plainly (or fail them, for registered files).
			head := r.SQHead()
			r.SetSQTail(head)
			taken := int(head - first)
			for i := range ops {
				if ops[i].res == -int32(unix.ECANCELED) && taken == 0 {
					if r.files != nil {
						ops[i].res = -int32(unix.EIO) // a slot is no descriptor
					} else {
						sendEach(ops[i : i+1])
					}
				} else if ops[i].res == -int32(unix.ECANCELED) {
					taken--
				}
			}
			want = int(head - first)
			break
		}
		submitted += n
	}
	got := r.reap(ops)
	for got < want {
		// A completion still outstanding (not expected with MSG_DONTWAIT):
		// wait for it with a system call the scheduler knows may block.
		if err := r.Wait(1, 0); err != nil {
			return // ops keep -ECANCELED: the streams fail
		}
		got += r.reap(ops)
	}
}

// reap reads the completions in the ring into ops and returns their number.
func (r *uring) reap(ops []sendOp) int {
	return r.Reap(func(c *iouring.CQE) {
		if i := int(c.UserData); i < len(ops) {
			ops[i].res = c.Res
		}
	})
}
