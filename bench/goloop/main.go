//go:build linux

// Command goloop is the floor of a Go plain-HTTP load client, for
// bench/wrk-compare.sh (GOLOOP=1): a closed loop of -c connections against
// one loopback server, in one of these shapes, doing per request only the
// work asked of it (-clocks clock reads and -figures HDR histogram
// records; spate makes about six and eleven for a plain request).
//
//   - default, wrk's shape: -loops goroutines, each locked to its thread
//     and owning an epoll instance and a share of the connections, read a
//     response, record it and write the next request on that thread.
//     With -hold (default) a loop also blocks in epoll_wait as a raw
//     system call, keeping its P, as wrk's threads keep their core.
//   - -handoff, spate's shape: one loop reads the responses and wakes, by a
//     channel, a goroutine per connection that records the figures and
//     writes the next request; the loop yields its P before it blocks.
//   - -batchrec: wrk's shape, but each loop hands its epoll batch's figures
//     to a recording goroutine (one wake-up a batch, not a response).
//   - -coro: wrk's shape, each connection's work (record, write the next
//     request) in a coroutine (iter.Pull) that its loop resumes on its
//     own thread when the response is read: wrk's shape for code written
//     as a goroutine per connection.
//
// Run beside wrk and spate it splits their gap into what Go costs, what
// spate's figures cost, and what its shape costs. Not a load tester:
// responses are delimited by Content-Length only, errors only counted.
// Loopback only; stops by itself after -d.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"iter"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"
)

// shape is how a loop runs its connections (see the package comment).
type shape struct {
	hold, handoff, batchrec, coro bool
	clocks, figures               int
}

func main() {
	addr := flag.String("addr", "127.0.0.1:18080", "server address (IPv4 loopback)")
	conns := flag.Int("c", 64, "connections, each a closed loop of one request at a time")
	loops := flag.Int("loops", 2, "epoll loops (threads); -handoff uses one")
	dur := flag.Duration("d", 5*time.Second, "how long to send")
	var sh shape
	flag.BoolVar(&sh.hold, "hold", true, "block in epoll_wait as a raw system call, keeping the thread's P")
	flag.BoolVar(&sh.handoff, "handoff", false, "spate's shape: a goroutine a connection, woken by one loop")
	flag.BoolVar(&sh.batchrec, "batchrec", false, "hand each epoll batch's figures to a recording goroutine")
	flag.BoolVar(&sh.coro, "coro", false, "wrk's shape, the work of each connection in a coroutine (iter.Pull) the loop resumes")
	flag.IntVar(&sh.clocks, "clocks", 1, "clock reads per request (at least 1: the response's end)")
	flag.IntVar(&sh.figures, "figures", 1, "histogram records per request")
	flag.Parse()
	ap, err := netip.ParseAddrPort(*addr)
	if err != nil || !ap.Addr().IsLoopback() || !ap.Addr().Is4() {
		fmt.Fprintf(os.Stderr, "goloop: -addr %q: want an IPv4 loopback address and port, such as 127.0.0.1:18080\n", *addr)
		os.Exit(2)
	}
	if *conns < 1 || *loops < 1 || *dur <= 0 {
		fmt.Fprintln(os.Stderr, "goloop: -c, -loops and -d must be positive")
		os.Exit(2)
	}
	if n := btoi(sh.handoff) + btoi(sh.batchrec) + btoi(sh.coro); n > 1 {
		fmt.Fprintln(os.Stderr, "goloop: -handoff, -batchrec and -coro are shapes: pick one")
		os.Exit(2)
	}
	if sh.handoff {
		*loops, sh.hold = 1, false
	}
	sh.clocks = max(sh.clocks, 1)
	sa := &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	// The request spate sends (bench/wrk-compare.sh's SAME_REQUEST).
	req := []byte("GET / HTTP/1.1\r\nHost: " + *addr + "\r\nUser-Agent: spate\r\nTraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n\r\n")
	var total, failed atomic.Int64
	var ru0, ru1 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru0)
	start := time.Now()
	end := start.Add(*dur)
	var wg sync.WaitGroup
	for i := range *loops {
		n := *conns / *loops
		if i < *conns%*loops {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, bad := loop(sa, req, n, end, sh)
			total.Add(done)
			failed.Add(bad)
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	n := total.Load()
	fmt.Printf("requests %d failed %d rate %.0f cpu_us_per_request %.2f\n", n, failed.Load(),
		float64(n)/wall.Seconds(), float64(cpu.Microseconds())/float64(max(n, 1)))
}

// btoi is 1 for true, 0 for false.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// read and write are read(2) and write(2) as raw system calls: the
// sockets never block.
func read(fd int, b []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

func write(fd int, b []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

// wait returns the next batch of events: it looks without blocking first,
// then blocks (at most 100 ms), holding the P or not.
func wait(ep int, evs []unix.EpollEvent, hold bool) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
	if e == 0 && n > 0 {
		return int(n), nil
	}
	if hold {
		n, _, e = unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 100, 0, 0)
		if e != 0 {
			return 0, e
		}
		return int(n), nil
	}
	return unix.EpollWait(ep, evs, 100)
}

// conn is one connection of a loop.
type conn struct {
	fd        int
	connected bool
	sent      atomic.Int64            // when the request was written, since the loop's start (-handoff: by its goroutine)
	buf       []byte                  // the response so far
	ch        chan time.Duration      // -handoff: the finished request's latency, to its goroutine
	d         time.Duration           // -coro: the finished request's latency, to its coroutine
	resume    func() (struct{}, bool) // -coro: runs the connection's coroutine to its next yield
	stop      func()                  // -coro: ends it
}

// figures records d in every histogram, reading the clock clocks-1 times
// more (the first read is the caller's).
type figures struct {
	hists  []*hdrhistogram.Histogram
	clocks int
}

func (f *figures) record(d time.Duration) {
	for range f.clocks - 1 {
		_ = time.Now()
	}
	for _, h := range f.hists {
		_ = h.RecordValue(int64(d))
	}
}

// loop runs n closed loops on one epoll instance until end, and returns
// the responses read whole and the connections that failed.
func loop(sa *unix.SockaddrInet4, req []byte, n int, end time.Time, sh shape) (done, failed int64) {
	if !sh.handoff {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return 0, int64(n)
	}
	defer unix.Close(ep)
	fig := &figures{clocks: sh.clocks}
	for range sh.figures {
		fig.hists = append(fig.hists, hdrhistogram.New(1, int64(time.Minute), 3))
	}
	var mu sync.Mutex          // -handoff: fig, shared by the connections' goroutines
	var workers sync.WaitGroup // -handoff and -batchrec: the goroutines started here
	defer workers.Wait()       // after the deferred closes below end the goroutines
	cs := make(map[int32]*conn, n)
	base := time.Now()
	send := func(c *conn, now time.Time) bool {
		c.sent.Store(int64(now.Sub(base)))
		k, err := write(c.fd, req)
		return err == nil && k == len(req)
	}
	drop := func(c *conn, bad bool) {
		if c.ch != nil {
			close(c.ch)
		}
		if c.stop != nil {
			c.stop()
		}
		delete(cs, int32(c.fd))
		unix.Close(c.fd)
		if bad {
			failed++
		}
	}
	for range n {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
		if err != nil {
			failed++
			continue
		}
		if err := unix.Connect(fd, sa); err != nil && err != unix.EINPROGRESS {
			unix.Close(fd)
			failed++
			continue
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		c := &conn{fd: fd, buf: make([]byte, 0, 4096)}
		cs[int32(fd)] = c
		// The first request goes once the connection is writable.
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLOUT | unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			drop(c, true)
		}
	}
	if sh.handoff {
		for _, c := range cs {
			c.ch = make(chan time.Duration, 1)
			workers.Add(1)
			go func() {
				defer workers.Done()
				for d := range c.ch {
					mu.Lock()
					fig.record(d)
					mu.Unlock()
					if !send(c, time.Now()) {
						return // the loop sees the connection fail
					}
				}
			}()
		}
	}
	if sh.coro {
		for _, c := range cs {
			c.resume, c.stop = iter.Pull(func(yield func(struct{}) bool) {
				for yield(struct{}{}) {
					fig.record(c.d)
					if !send(c, time.Now()) {
						return // the loop sees the connection fail
					}
				}
			})
			c.resume() // to its first yield
		}
	}
	var recs, free chan []time.Duration // -batchrec: batches to record, and recorded
	var batch []time.Duration
	if sh.batchrec {
		recs, free = make(chan []time.Duration, 64), make(chan []time.Duration, 64)
		for range 64 {
			free <- make([]time.Duration, 0, 256)
		}
		workers.Add(1)
		go func() {
			defer workers.Done()
			for b := range recs {
				for _, d := range b {
					fig.record(d)
				}
				free <- b[:0]
			}
		}()
		defer close(recs)
		batch = <-free
	}
	defer func() {
		for _, c := range cs {
			drop(c, false)
		}
	}()
	evs := make([]unix.EpollEvent, 256)
	rbuf := make([]byte, 64<<10)
	handed := false // -handoff: a goroutine was woken since the loop last blocked
	for len(cs) > 0 {
		if len(batch) > 0 {
			recs <- batch
			batch = <-free
		}
		if handed {
			// The goroutines woken write their next requests first.
			handed = false
			runtime.Gosched()
		}
		k, err := wait(ep, evs, sh.hold)
		if err != nil && err != unix.EINTR {
			break
		}
		for _, ev := range evs[:max(k, 0)] {
			c := cs[ev.Fd]
			if c == nil {
				continue
			}
			if !c.connected {
				c.connected = true
				_ = unix.EpollCtl(ep, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: ev.Fd})
				if !send(c, time.Now()) {
					drop(c, true)
				}
				continue
			}
			m, err := read(c.fd, rbuf)
			if err == unix.EAGAIN {
				continue
			}
			if m <= 0 {
				drop(c, true)
				continue
			}
			c.buf = append(c.buf, rbuf[:m]...)
			if !whole(c.buf) {
				continue
			}
			c.buf = c.buf[:0]
			now := time.Now()
			d := now.Sub(base) - time.Duration(c.sent.Load())
			done++
			if now.After(end) {
				drop(c, false)
				continue
			}
			switch {
			case sh.handoff:
				c.ch <- d
				handed = true
				continue
			case sh.coro:
				c.d = d
				c.resume()
				continue
			case sh.batchrec:
				batch = append(batch, d)
			default:
				fig.record(d)
			}
			if !send(c, now) {
				drop(c, true)
			}
		}
	}
	return done, failed
}

// whole says b holds a whole response whose body is delimited by
// Content-Length (or that has none).
func whole(b []byte) bool {
	i := bytes.Index(b, []byte("\r\n\r\n"))
	if i < 0 {
		return false
	}
	j := bytes.Index(b[:i], []byte("Content-Length: "))
	if j < 0 {
		return true
	}
	v := b[j+len("Content-Length: ") : i]
	if e := bytes.IndexByte(v, '\r'); e >= 0 {
		v = v[:e]
	}
	n, err := strconv.Atoi(string(v))
	return err == nil && len(b) >= i+4+n
}
