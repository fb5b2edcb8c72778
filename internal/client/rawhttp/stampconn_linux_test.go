package rawhttp

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// stampedPair returns a StampedConn dialled to a loopback listener, and the
// listener's end of it.
func stampedPair(t *testing.T) (*StampedConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dial := StampDial((&net.Dialer{}).DialContext)
	c, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	sc, ok := c.(*StampedConn)
	if !ok || Stamped(c) != sc {
		t.Fatalf("dialled %T, want a StampedConn", c)
	}
	return sc, peer
}

// peerWrite writes p to w and returns the times just before and after.
func peerWrite(t *testing.T, w io.Writer, p string) [2]time.Time {
	t.Helper()
	w0 := time.Now()
	if _, err := io.WriteString(w, p); err != nil {
		t.Fatal(err)
	}
	return [2]time.Time{w0, time.Now()}
}

// TestStampedConnReads: a read is stamped with the kernel's receive time
// of its last bytes (within the peer's write, however late the read), and
// its bound reaches back to when the socket was last seen empty, no
// further; without the kernel's time, the stamp is the read's own and the
// bound still holds the write.
// The read lag counts from the connection's last write.
func TestStampedConnReads(t *testing.T) {
	for _, kernel := range []bool{true, false} {
		t.Run(map[bool]string{true: "kernel stamps", false: "read stamps"}[kernel], func(t *testing.T) {
			if !kernel {
				defer SetNoKernelStamps()()
			}
			sc, peer := stampedPair(t)
			buf := make([]byte, 64)
			// The kernel turns its receive stamps on for the whole system
			// in deferred work when the first socket asks (see
			// kernelStampsOn): the first reads may come without.
			var w1 [2]time.Time
			var rd Read
			for deadline := time.Now().Add(10 * time.Second); ; {
				w1 = peerWrite(t, peer, "a")
				if n, err := sc.Read(buf); n != 1 || err != nil {
					t.Fatalf("read %d, %v", n, err)
				}
				if rd = sc.Last(); rd.Kernel || !kernel || time.Now().After(deadline) {
					break
				}
			}
			if rd.Kernel != kernel {
				t.Fatalf("read %+v, want kernel %v", rd, kernel)
			}
			n0 := rd.N
			if kernel && (rd.At.Before(w1[0]) || rd.At.After(w1[1])) {
				t.Errorf("stamped %v after the write began (written in %v), want within it", rd.At.Sub(w1[0]), w1[1].Sub(w1[0]))
			}
			// Two writes 5 ms apart, read 30 ms after the second in one
			// read: the stamp is the second's, the bound holds the first.
			if _, err := sc.Write([]byte("x")); err != nil { // a request: the lag counts anew
				t.Fatal(err)
			}
			// A pause the bound takes in: the kernel may merge the two
			// writes' segments while neither is read, and give both the
			// second's receive time, so nothing after the last read that
			// emptied the socket is certain.
			time.Sleep(20 * time.Millisecond)
			first := peerWrite(t, peer, "b")
			time.Sleep(5 * time.Millisecond)
			second := peerWrite(t, peer, "c")
			time.Sleep(30 * time.Millisecond)
			if n, err := sc.Read(buf); n != 2 || err != nil {
				t.Fatalf("read %d %q, %v; want both writes", n, buf[:n], err)
			}
			rd = sc.Last()
			if rd.N != n0+1 || rd.At.Add(-rd.Bound).After(first[1]) {
				t.Errorf("read %+v: its range [%v, %v] after the first write does not hold it", rd, rd.At.Add(-rd.Bound).Sub(first[0]), rd.At.Sub(first[0]))
			}
			if kernel && (rd.At.Before(second[0]) || rd.At.After(second[1])) {
				t.Errorf("stamped %v after the second write began, want within it (%v)", rd.At.Sub(second[0]), second[1].Sub(second[0]))
			}
			if rd.At.Add(-rd.Bound).Before(w1[0]) {
				t.Errorf("read %+v: its range reaches %v before the last read that emptied the socket, want no earlier", rd, w1[0].Sub(rd.At.Add(-rd.Bound)))
			}
			if lag := sc.Lag(); lag < 25*time.Millisecond {
				t.Errorf("read lag %v, want at least the 30 ms the bytes waited", lag)
			}
			sc.Write([]byte("y"))
			if lag := sc.Lag(); lag != 0 {
				t.Errorf("read lag %v after a write, want 0", lag)
			}
		})
	}
}

// TestStampedConnMergedSegments: two small writes 6 ms apart that wait
// unread in a new connection's socket come out of one read with the
// second's receive time for every byte (tcpdump shows two segments 6 ms
// apart: the kernel merged the second into the first as it queued it, and
// gave the merged one the later time), so the first byte's receive time
// says nothing of when the first write came, and the bound must reach back
// to when the socket was last seen empty. With the bound taken from the
// first byte's receive time (the version before), it was 0 and the range
// missed the first write by 6.2 ms.
func TestStampedConnMergedSegments(t *testing.T) {
	sc, peer := stampedPair(t)
	buf := make([]byte, 256)
	ev := "data: {\"choices\":[{\"delta\":{\"content\":\" the\"}}]}\n\n"
	time.Sleep(5 * time.Millisecond)
	first := peerWrite(t, peer, ev)
	time.Sleep(6 * time.Millisecond)
	second := peerWrite(t, peer, ev)
	time.Sleep(30 * time.Millisecond)
	if n, err := sc.Read(buf); n != 2*len(ev) || err != nil {
		t.Fatalf("read %d, %v; want both writes", n, err)
	}
	rd := sc.Last()
	if !rd.Kernel {
		t.Skip("the kernel gave no receive time (its stamps are turned on for the whole system in deferred work: see kernelStampsOn)")
	}
	if rd.At.Add(-rd.Bound).After(first[1]) || rd.At.Before(second[0]) {
		t.Errorf("read stamped %v after the second write began, bound %v: its range [%v, %v] after the first write does not hold it",
			rd.At.Sub(second[0]), rd.Bound, rd.At.Add(-rd.Bound).Sub(first[0]), rd.At.Sub(first[0]))
	}
}

// TestStampedConnErrors: a StampedConn fails as net.Conn's Read does, so
// that callers classify its errors the same: the peer's close is io.EOF, a
// deadline a timeout, a closed connection net.ErrClosed.
func TestStampedConnErrors(t *testing.T) {
	sc, peer := stampedPair(t)
	buf := make([]byte, 8)
	sc.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := sc.Read(buf)
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("read past its deadline: %v, want a timeout", err)
	}
	sc.SetReadDeadline(time.Time{})
	peer.Close()
	if n, err := sc.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("read after the peer closed: %d, %v; want io.EOF", n, err)
	}
	sc.Close()
	if _, err := sc.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after Close: %v, want net.ErrClosed", err)
	}
}
