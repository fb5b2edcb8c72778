//go:build linux

package uring

import (
	"errors"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newRing sets up a ring with flags, or skips where io_uring is refused
// (old kernel, disabled, seccomp).
func newRing(t *testing.T, flags uint32) *Ring {
	t.Helper()
	r, err := New(64, flags, 256)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) {
		t.Skipf("io_uring not available here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// TestMultishotRecv: one armed multishot receive delivers each write in a
// provided buffer (the kernel's, then given back), stays armed (CQEMore)
// while the peer writes, and ends with 0 when it closes; a completion
// with no buffer left ends it with ENOBUFS, and re-arming it reads on.
func TestMultishotRecv(t *testing.T) {
	runtime.LockOSThread() // SetupSingleIssuer: the ring is this thread's
	defer runtime.UnlockOSThread()
	r := newRing(t, SetupSingleIssuer|SetupDeferTaskrun)
	br, err := r.NewBufRing(7, 2, 64)
	if errors.Is(err, unix.EINVAL) {
		t.Skipf("provided buffer rings not available here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(br.Close)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	arm := func() {
		if !r.Push(SQE{Opcode: OpRecv, Flags: FlagBufferSelect, Ioprio: RecvMultishot, Fd: int32(fds[1]), UserData: 42, BufGroup: br.Group()}) {
			t.Fatal("submission ring full")
		}
	}
	arm()
	type got struct {
		data string
		more bool
		res  int32
	}
	// next waits for one completion, gives its buffer back and returns it.
	next := func(recycle bool) got {
		t.Helper()
		if err := r.Wait(1, 0); err != nil {
			t.Fatal(err)
		}
		var g []got
		r.Reap(func(c *CQE) {
			if c.UserData != 42 {
				t.Errorf("user data %d, want 42", c.UserData)
			}
			x := got{more: c.Flags&CQEMore != 0, res: c.Res}
			if c.Flags&CQEBuffer != 0 {
				x.data = string(br.Buf(c.BufferID(), int(c.Res)))
				if recycle {
					br.Recycle(c.BufferID())
					br.Publish()
				}
			}
			g = append(g, x)
		})
		if len(g) != 1 {
			t.Fatalf("%d completions, want 1: %+v", len(g), g)
		}
		return g[0]
	}
	for _, msg := range []string{"first", "second write"} {
		if _, err := unix.Write(fds[0], []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if g := next(true); g.data != msg || !g.more {
			t.Fatalf("got %+v, want %q still armed", g, msg)
		}
	}
	// Two writes kept (not recycled) use up both buffers; a third finds
	// none and ends the receive with ENOBUFS.
	for _, msg := range []string{"a", "b"} {
		if _, err := unix.Write(fds[0], []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if g := next(false); g.data != msg {
			t.Fatalf("got %+v, want %q", g, msg)
		}
	}
	if _, err := unix.Write(fds[0], []byte("c")); err != nil {
		t.Fatal(err)
	}
	if g := next(false); g.more || g.res != -int32(unix.ENOBUFS) {
		t.Fatalf("got %+v, want the end with ENOBUFS", g)
	}
	// The buffers back, re-armed: the bytes waiting are read.
	br.Recycle(0)
	br.Recycle(1)
	br.Publish()
	arm()
	if g := next(true); g.data != "c" || !g.more {
		t.Fatalf("got %+v, want \"c\" after re-arming", g)
	}
	_ = unix.Shutdown(fds[0], unix.SHUT_WR)
	if g := next(true); g.more || g.res != 0 {
		t.Fatalf("got %+v, want the end (0) when the peer shuts down", g)
	}
}

// TestSubmitSend: entries pushed and submitted complete inline (a
// non-blocking send), and Reap sees each once.
func TestSubmitSend(t *testing.T) {
	r := newRing(t, 0)
	if err := r.Supports(OpSend); err != nil {
		t.Skip(err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	msgs := []string{"one", "two", "three"}
	for i, m := range msgs {
		b := []byte(m)
		if !r.Push(SQE{Opcode: OpSend, Fd: int32(fds[0]), Addr: uint64(uintptr(unsafe.Pointer(&b[0]))), Len: uint32(len(b)), OpFlags: unix.MSG_DONTWAIT, UserData: uint64(i)}) {
			t.Fatal("submission ring full")
		}
		defer runtime.KeepAlive(b)
	}
	if n, err := r.Submit(); err != nil || n != len(msgs) {
		t.Fatalf("submitted %d (%v), want %d", n, err, len(msgs))
	}
	seen := 0
	for seen < len(msgs) {
		if err := r.Wait(1, 0); err != nil {
			t.Fatal(err)
		}
		seen += r.Reap(func(c *CQE) {
			if int(c.UserData) >= len(msgs) || c.Res != int32(len(msgs[c.UserData])) {
				t.Errorf("completion %+v", *c)
			}
		})
	}
	buf := make([]byte, 64)
	n, err := unix.Read(fds[1], buf)
	if err != nil || string(buf[:n]) != "onetwothree" {
		t.Fatalf("read %q (%v)", buf[:n], err)
	}
	if r.Pending() != 0 {
		t.Fatalf("%d entries still pending", r.Pending())
	}
}
