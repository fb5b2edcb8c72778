//go:build linux

package main

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	iouring "github.com/spate-dev/spate/internal/uring"
)

// The uring client (-client uring): the raw client's one loop, reading
// with io_uring instead of epoll and read(2). Each connection has one
// multishot receive armed for its life (IORING_OP_RECVMSG, so that each
// completion carries the kernel's receive time, as spate's reactor reads
// with SO_TIMESTAMPNS): the kernel puts each arrival in a provided buffer
// and posts a completion, and the loop collects every completion due with
// one io_uring_enter(2) (the ring runs its completion work only then,
// SetupDeferTaskrun) — no readiness event and no read(2) per token. Its
// purpose is the measurement in bench/README.md: what such a read path
// saves per token against the epoll one, side by side.

const (
	uringBufs    = 4096
	uringBufSize = 4096
	// recvOutLen is struct io_uring_recvmsg_out; stampSpace the control
	// space a receive time takes (CMSG_SPACE of a struct timespec).
	recvOutLen = 16
	stampSpace = 32
)

// runURing drives one level with the uring client: c workers started at
// staggered offsets within one stream length, as runRaw's.
func runURing(ctx context.Context, addr string, pid, c int, ttft, itl time.Duration, tokens int, duration time.Duration) *level {
	l := &level{conc: c, ttft: newHist(), itl: newHist()}
	p, err := newLevelPlan(addr, ttft, itl, tokens, duration)
	if err != nil {
		l.firstErr.Store(err.Error())
		return l
	}
	simCPU0 := procCPU(pid)
	own0 := selfCPU()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // the ring is this thread's (SetupSingleIssuer)
		defer runtime.UnlockOSThread()
		u := &uringLoop{l: l, sa: &p.sa, req: p.req, tokens: tokens, measureFrom: p.measureFrom, end: p.end, conns: map[uint64]*rawConn{}}
		if err := u.open(); err != nil {
			l.firstErr.Store(err.Error())
			return
		}
		defer u.close()
		u.run(ctx, c, p.streamLen, p.start, p.hardEnd)
	}()
	<-done
	l.wall = time.Since(p.start)
	l.simCPU = procCPU(pid).sub(simCPU0)
	l.ownCPU = selfCPU().sub(own0)
	return l
}

// uringLoop is the uring client's loop and its connections, by id.
type uringLoop struct {
	l                *level
	sa               *unix.SockaddrInet4
	req              []byte
	tokens           int
	measureFrom, end time.Time
	ring             *iouring.Ring
	bufs             *iouring.BufRing
	msg              unix.Msghdr // the receives' template: no name, room for a receive time
	conns            map[uint64]*rawConn
	nextID           uint64
}

func (u *uringLoop) open() error {
	r, err := iouring.New(4096, iouring.SetupSingleIssuer|iouring.SetupDeferTaskrun|iouring.SetupCoopTaskrun, 4*uringBufs)
	if err != nil {
		return err
	}
	if err := r.Supports(iouring.OpRecvMsg); err != nil {
		r.Close()
		return err
	}
	if u.bufs, err = r.NewBufRing(1, uringBufs, uringBufSize); err != nil {
		r.Close()
		return err
	}
	u.ring = r
	u.msg.Controllen = stampSpace
	return nil
}

func (u *uringLoop) close() {
	for id, rc := range u.conns {
		u.drop(id, rc)
	}
	u.ring.Close()
	u.bufs.Close()
}

func (u *uringLoop) fail(msg string) {
	atomic.AddInt64(&u.l.failed, 1)
	u.l.firstErr.CompareAndSwap(nil, msg)
}

// arm arms connection id's multishot receive.
func (u *uringLoop) arm(fd int, id uint64) {
	for !u.ring.Push(iouring.SQE{Opcode: iouring.OpRecvMsg, Flags: iouring.FlagBufferSelect, Ioprio: iouring.RecvMultishot,
		Fd: int32(fd), Addr: uint64(uintptr(unsafe.Pointer(&u.msg))), Len: 1, UserData: id, BufGroup: u.bufs.Group()}) {
		_, _ = u.ring.Submit() // full: make room
	}
}

func (u *uringLoop) send(rc *rawConn, now time.Time) bool {
	*rc = rawConn{fd: rc.fd, worker: rc.worker, buf: rc.buf[:0], line: rc.line[:0], measured: !now.Before(u.measureFrom)}
	for off := 0; off < len(u.req); {
		n, err := unix.Write(rc.fd, u.req[off:])
		if err != nil {
			u.fail("write: " + err.Error())
			return false
		}
		off += n
	}
	rc.sent = time.Now()
	return true
}

// drop closes a connection; its receive ends with the shutdown, and a late
// completion for its id finds no connection.
func (u *uringLoop) drop(id uint64, rc *rawConn) {
	_ = unix.Shutdown(rc.fd, unix.SHUT_RDWR)
	unix.Close(rc.fd)
	delete(u.conns, id)
}

func (u *uringLoop) dial(w int, now time.Time) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		u.fail("socket: " + err.Error())
		return
	}
	if err := unix.Connect(fd, u.sa); err != nil {
		unix.Close(fd)
		u.fail("connect: " + err.Error())
		return
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	_ = unix.SetNonblock(fd, true)
	u.nextID++
	rc := &rawConn{fd: fd, worker: w, buf: make([]byte, 0, 4096)}
	u.conns[u.nextID] = rc
	u.arm(fd, u.nextID)
	if !u.send(rc, now) {
		u.drop(u.nextID, rc)
	}
}

func (u *uringLoop) run(ctx context.Context, c int, streamLen time.Duration, start, hardEnd time.Time) {
	next := 0
	offset := func(w int) time.Time { return start.Add(time.Duration(int64(streamLen) * int64(w) / int64(c))) }
	for {
		now := time.Now()
		if ctx.Err() != nil || now.After(hardEnd) {
			return
		}
		for next < c && !offset(next).After(now) {
			if now.Before(u.end) {
				u.dial(next, now)
			}
			next++
		}
		if next == c && len(u.conns) == 0 {
			return
		}
		wait := 50 * time.Millisecond
		if next < c {
			wait = min(time.Until(offset(next)), wait) + time.Millisecond
		}
		if err := u.ring.Wait(1, wait); err != nil {
			u.fail(err.Error())
			return
		}
		recycled := false
		u.ring.Reap(func(q *iouring.CQE) {
			rc := u.conns[q.UserData]
			if q.Flags&iouring.CQEBuffer != 0 {
				if rc != nil && q.Res > 0 {
					rc = u.read(q.UserData, rc, u.bufs.Buf(q.BufferID(), int(q.Res)))
				}
				u.bufs.Recycle(q.BufferID())
				recycled = true
			}
			if q.Flags&iouring.CQEMore != 0 || rc == nil {
				return
			}
			switch {
			case q.Res == -int32(unix.ENOBUFS) || q.Res > 0:
				u.arm(rc.fd, q.UserData) // out of buffers: armed again
			case q.Res == 0:
				if now.Before(u.end) || rc.n > 0 {
					u.fail(fmt.Sprintf("connection closed after %d content events", rc.n))
				}
				u.drop(q.UserData, rc)
			default:
				u.fail(fmt.Sprintf("receive: %v", unix.Errno(-q.Res)))
				u.drop(q.UserData, rc)
			}
		})
		if recycled {
			u.bufs.Publish()
		}
	}
}

// read parses one completion's buffer (struct io_uring_recvmsg_out, the
// control messages, the payload) and returns the connection, or nil once
// it is dropped.
func (u *uringLoop) read(id uint64, rc *rawConn, b []byte) *rawConn {
	if len(b) < recvOutLen+stampSpace {
		u.fail("short receive")
		u.drop(id, rc)
		return nil
	}
	ctl := *(*uint32)(unsafe.Pointer(&b[4]))
	payload := *(*uint32)(unsafe.Pointer(&b[8]))
	t := time.Now()
	if ctl >= stampSpace {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[recvOutLen]))
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SO_TIMESTAMPNS {
			ts := (*unix.Timespec)(unsafe.Pointer(&b[recvOutLen+unix.SizeofCmsghdr]))
			// The kernel's receive time, on the wall clock: t less the wait.
			if w := t.UnixNano() - ts.Nano(); w >= 0 && w < int64(10*time.Second) {
				t = t.Add(-time.Duration(w))
			}
		}
	}
	data := b[recvOutLen+stampSpace:]
	data = data[:min(int(payload), len(data))]
	complete, perr := rc.parse(data, t, u.l)
	switch {
	case perr != "":
		u.fail(perr)
		u.drop(id, rc)
		return nil
	case !complete:
		return rc
	}
	if !rc.done {
		u.fail("stream ended without [DONE]")
	} else if rc.n != u.tokens {
		atomic.AddInt64(&u.l.short, 1)
		u.l.firstErr.CompareAndSwap(nil, fmt.Sprintf("stream had %d content events, want %d", rc.n, u.tokens))
	}
	atomic.AddInt64(&u.l.completed, 1)
	if t.Before(u.end) && u.send(rc, t) {
		return rc
	}
	u.drop(id, rc)
	return nil
}
