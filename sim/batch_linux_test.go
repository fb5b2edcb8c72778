//go:build linux

package sim

import (
	"bytes"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// socketPair returns a connected pair of non-blocking stream sockets whose
// sending side has a small buffer, closed at the end of the test.
func socketPair(t *testing.T) (w, r int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.Close(fds[0])
		unix.Close(fds[1])
	})
	return fds[0], fds[1]
}

// drain reads everything readable from a non-blocking socket.
func drain(t *testing.T, fd int) []byte {
	t.Helper()
	var out []byte
	buf := make([]byte, 1<<16)
	for {
		n, err := unix.Read(fd, buf)
		if n > 0 {
			out = append(out, buf[:n]...)
		}
		if err == unix.EAGAIN || n == 0 {
			return out
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
}

// senders returns the senders this machine has.
func senders(t *testing.T) []sender {
	t.Helper()
	out := []sender{sendSender{}}
	if s, err := newSender(WritePathURing); err == nil {
		out = append(out, s)
		t.Cleanup(s.close)
		t.Logf("io_uring sender; sockets held as registered files: %v", (*uring)(s.(*uringSender)).files != nil)
	} else {
		t.Logf("io_uring not available here: %v", err)
	}
	return out
}

// TestSenders checks each sender's results on real sockets: whole writes
// to several sockets in one batch, a short write and then would-block on a
// full socket, and an error for a socket whose peer is gone.
func TestSenders(t *testing.T) {
	for _, snd := range senders(t) {
		t.Run(snd.name(), func(t *testing.T) {
			// Several sockets in one batch, in order, an empty op among them.
			var ops []sendOp
			var readers []int
			hold := func(fd int) int {
				h, err := snd.hold(fd)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { snd.release(h) })
				return h
			}
			for i := range 5 {
				w, r := socketPair(t)
				readers = append(readers, r)
				ops = append(ops, sendOp{fd: hold(w), b: []byte("frame " + strconv.Itoa(i))})
			}
			ops[2].b = nil
			snd.sendAll(ops)
			for i, op := range ops {
				if want := int32(len(op.b)); op.res != want {
					t.Errorf("op %d: res %d, want %d", i, op.res, want)
				}
				if got := drain(t, readers[i]); !bytes.Equal(got, op.b) {
					t.Errorf("op %d: read %q, want %q", i, got, op.b)
				}
			}

			// A full socket: a short write, then would-block.
			w, r := socketPair(t)
			big := bytes.Repeat([]byte("x"), 1<<20)
			op := []sendOp{{fd: hold(w), b: big}}
			snd.sendAll(op)
			if op[0].res <= 0 || int(op[0].res) >= len(big) {
				t.Fatalf("big write: res %d, want a short write", op[0].res)
			}
			snd.sendAll(op)
			if op[0].res != resWouldBlock {
				t.Errorf("write to a full socket: res %d, want resWouldBlock", op[0].res)
			}
			drain(t, r)

			// The peer is gone.
			w2, r2 := socketPair(t)
			unix.Close(r2)
			op = []sendOp{{fd: hold(w2), b: []byte("late")}}
			snd.sendAll(op)
			if op[0].res >= 0 || op[0].res == resWouldBlock {
				t.Errorf("write to a closed peer: res %d, want -errno", op[0].res)
			}
		})
	}
}

// TestURingLargeBatch sends more ops than the ring holds in one call.
func TestURingLargeBatch(t *testing.T) {
	snd, err := newSender(WritePathURing)
	if err != nil {
		t.Skipf("io_uring not available here: %v", err)
	}
	defer snd.close()
	w, r := socketPair(t)
	_ = unix.SetsockoptInt(w, unix.SOL_SOCKET, unix.SO_SNDBUF, 1<<20)
	h, err := snd.hold(w)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.release(h)
	ops := make([]sendOp, 3*uringEntries+7)
	var want []byte
	for i := range ops {
		ops[i] = sendOp{fd: h, b: []byte(strconv.Itoa(i) + ",")}
		want = append(want, ops[i].b...)
	}
	snd.sendAll(ops)
	for i, op := range ops {
		if op.res != int32(len(op.b)) {
			t.Fatalf("op %d: res %d", i, op.res)
		}
	}
	if got := drain(t, r); !bytes.Equal(got, want) {
		t.Errorf("read %d bytes, want %d in order", len(got), len(want))
	}
}

// scriptedSender takes at most take bytes of each op per batch (0: would
// block), and records what it took per descriptor.
type scriptedSender struct {
	take  int
	fail  bool
	taken map[int][]byte
	calls int
}

func (s *scriptedSender) sendAll(ops []sendOp) {
	s.calls++
	for i := range ops {
		op := &ops[i]
		switch {
		case s.fail:
			op.res = -int32(unix.EPIPE)
		case s.take == 0 && len(op.b) > 0:
			op.res = resWouldBlock
		default:
			n := min(s.take, len(op.b))
			s.taken[op.fd] = append(s.taken[op.fd], op.b[:n]...)
			op.res = int32(n)
		}
	}
}
func (*scriptedSender) close()                   {}
func (*scriptedSender) name() string             { return "scripted" }
func (*scriptedSender) hold(fd int) (int, error) { return dupSocket(fd) }
func (*scriptedSender) release(h int)            { closeSocket(h) }

// devNull returns a descriptor the pacer may close.
func devNull(t *testing.T) int {
	t.Helper()
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// directStream returns a direct stream of n tokens on a pacer without a
// running loop, for driving pass by hand.
func directStream(t *testing.T, s *Server, p *pacer, n int) (*paced, *sseStream) {
	t.Helper()
	g := &generation{ep: epCompletion, seqNo: 1, id: "cmpl-test", created: 1700000000, model: "m", finish: "stop", n: n, truncate: -1, stallAt: -1, arrival: time.Now(), st: newStream()}
	x := newSSEStream(s, g, &discardRW{h: make(map[string][]string)})
	x.fd = devNull(t)
	e := &paced{st: g.st, out: x, start: p.since(g.arrival), total: n, stallAt: -1}
	if !p.submit(e) {
		t.Fatal("submit refused")
	}
	return e, x
}

// wantFrames is what net/http sends for n single-token writes of x's
// stream: each token its own chunk, the last with [DONE].
func wantFrames(x *sseStream, n int) []byte {
	y := newSSEStream(x.s, x.g, x.w)
	for k := 1; k <= n; k++ {
		y.frame(k)
	}
	return y.pend
}

// TestPacerPartialWrites drives the pacer's pass by hand with a sender that
// takes a few bytes at a time: the bytes leave in order, across passes,
// tokens are counted once all of theirs left, and the stream is handed back
// when the last byte is out.
func TestPacerPartialWrites(t *testing.T) {
	s, err := New(Deterministic(0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snd := &scriptedSender{take: 37, taken: map[int][]byte{}}
	p := newPacer(0, 0, 1, snd, false, false)
	const n = 6
	_, x := directStream(t, s, p, n)
	fd := x.fd
	want := wantFrames(x, n)
	for i := 0; !x.g.st.done.Load(); i++ {
		if i > 10000 {
			t.Fatal("stream never finished")
		}
		p.pass()
	}
	if got := snd.taken[fd]; !bytes.Equal(got, want) {
		t.Errorf("bytes sent:\n%q\nwant\n%q", got, want)
	}
	if x.state != sseDone || x.counted != n || len(x.pend) != 0 || !x.released {
		t.Errorf("state %v counted %d pend %d released %v", x.state, x.counted, len(x.pend), x.released)
	}
	if snd.calls < len(want)/37 {
		t.Errorf("%d batches for %d bytes at 37 a batch", snd.calls, len(want))
	}
	p.shutdown()
}

// TestPacerSettle checks the outcomes of a write on a direct stream: a full
// socket keeps the bytes, a socket full for longer than writeStallLimit or a
// failed write fails the stream, and a short write leaves it mid-frame.
func TestPacerSettle(t *testing.T) {
	s, err := New(Deterministic(0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Now()
	for _, tc := range []struct {
		name    string
		results []int32
		gaps    []time.Duration // wall time of each result after t0
		pending bool
		state   sseState
		mid     bool
	}{
		{"whole", []int32{-1}, []time.Duration{0}, false, sseOpen, false},
		{"short", []int32{5}, []time.Duration{0}, true, sseOpen, true},
		{"blocked-briefly", []int32{resWouldBlock, resWouldBlock}, []time.Duration{0, writeStallLimit / 2}, true, sseOpen, false},
		{"blocked-too-long", []int32{resWouldBlock, resWouldBlock}, []time.Duration{0, writeStallLimit + time.Millisecond}, false, sseFailed, false},
		{"error", []int32{-int32(unix.ECONNRESET)}, []time.Duration{0}, false, sseFailed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPacer(0, 0, 1, &scriptedSender{taken: map[int][]byte{}}, false, false)
			defer p.shutdown()
			_, x := directStream(t, s, p, 3)
			x.frame(1)
			var pending bool
			for i, res := range tc.results {
				if res == -1 {
					res = int32(len(x.pend))
				}
				pending = x.settle(res, t0.Add(tc.gaps[i]))
			}
			if pending != tc.pending || x.state != tc.state || x.midFrame != tc.mid {
				t.Errorf("pending %v state %v midFrame %v, want %v %v %v", pending, x.state, x.midFrame, tc.pending, tc.state, tc.mid)
			}
		})
	}
}

// TestPacerCancelAndShutdown checks that a cancelled direct stream is
// handed back at the next pass and never written again, and that shutdown
// hands back the rest.
func TestPacerCancelAndShutdown(t *testing.T) {
	s, err := New(Deterministic(0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snd := &scriptedSender{take: 0, taken: map[int][]byte{}} // every socket full
	p := newPacer(0, time.Hour, 1, snd, false, false)
	e1, x1 := directStream(t, s, p, 3)
	_, x2 := directStream(t, s, p, 3)
	p.pass() // both frame their first token; the sockets take nothing
	if x1.released || x2.released || len(p.dirty) != 2 {
		t.Fatalf("after one pass: released %v %v, dirty %d", x1.released, x2.released, len(p.dirty))
	}
	p.cancel(e1)
	calls := snd.calls
	p.pass()
	if !x1.released || x1.state != sseAbandoned || !x1.g.st.done.Load() {
		t.Errorf("cancelled stream: released %v state %v done %v", x1.released, x1.state, x1.g.st.done.Load())
	}
	if snd.calls != calls+1 || len(p.dirty) != 1 || p.dirty[0] != x2 {
		t.Errorf("after cancel: %d batches (want %d), dirty %d", snd.calls, calls+1, len(p.dirty))
	}
	p.shutdown()
	if !x2.released || !x2.g.st.done.Load() || x2.state != sseAbandoned {
		t.Errorf("after shutdown: released %v done %v state %v", x2.released, x2.g.st.done.Load(), x2.state)
	}
	if p.submit(&paced{st: newStream(), total: 1, stallAt: -1}) {
		t.Error("a stopped pacer took a request")
	}
}

// TestPacerWriteError checks that a failed write hands the stream back failed.
func TestPacerWriteError(t *testing.T) {
	s, err := New(Deterministic(0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snd := &scriptedSender{fail: true, taken: map[int][]byte{}}
	p := newPacer(0, time.Millisecond, 1, snd, false, false)
	_, x := directStream(t, s, p, 5)
	p.pass()
	if !x.released || x.state != sseFailed || !x.g.st.done.Load() {
		t.Errorf("released %v state %v done %v", x.released, x.state, x.g.st.done.Load())
	}
	p.shutdown()
}

// TestPacerHandsBackUnsentEnd: a stream whose last events were framed but
// not all sent (its socket full, whole or after part of a frame) when it is
// cancelled or the server closes is handed back abandoned, not done: its
// handler must not count a success, nor let net/http end a body whose
// [DONE] never left.
func TestPacerHandsBackUnsentEnd(t *testing.T) {
	s, err := New(Deterministic(0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name     string
		take     int
		shutdown bool
		mid      bool
	}{
		{"full/cancel", 0, false, false},
		{"full/shutdown", 0, true, false},
		{"part/cancel", 5, false, true},
		{"part/shutdown", 5, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snd := &scriptedSender{take: tc.take, taken: map[int][]byte{}}
			p := newPacer(0, 0, 1, snd, false, false) // every token due at once
			e, x := directStream(t, s, p, 3)
			p.pass() // frames all three, usage and [DONE]; the socket takes tc.take bytes
			if x.state != sseDone || len(x.pend) == 0 || x.released {
				t.Fatalf("after one pass: state %v, %d bytes pending, released %v; want done, framed, not sent", x.state, len(x.pend), x.released)
			}
			if tc.shutdown {
				p.shutdown()
			} else {
				p.cancel(e)
				p.pass()
				defer p.shutdown()
			}
			if !x.released || !x.g.st.done.Load() || x.state != sseAbandoned || x.midFrame != tc.mid {
				t.Errorf("handed back: released %v done %v state %v midFrame %v; want released, done, abandoned, midFrame %v", x.released, x.g.st.done.Load(), x.state, x.midFrame, tc.mid)
			}
		})
	}
}
