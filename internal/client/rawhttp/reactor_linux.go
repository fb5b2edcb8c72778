//go:build linux

package rawhttp

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// parkInPoller says whether a reactor waits in the runtime's poller rather
// than in a blocking epoll_wait (see newReactor); a variable for tests.
var parkInPoller = func() bool { return runtime.GOMAXPROCS(0) < 2 }

// wakeStall is how long every reactor sleeps after a wake-up that found
// events before it reads them (0: not at all); see SetWakeStall.
var wakeStall atomic.Int64

// SetWakeStall makes every reactor sleep d after each wake-up that found
// events, before reading them, and every StampedConn after each wait for
// its socket, until restore is called: reads late on demand, as on a
// machine that wakes its readers late, so that a test can check that such
// a run's late stamps are counted and bounded. For tests only; not safe
// beside other tests that time reads.
func SetWakeStall(d time.Duration) (restore func()) {
	old := wakeStall.Swap(int64(d))
	return func() { wakeStall.Store(old) }
}

// noKernelStamps says new connections read without the kernel's receive
// stamps; see SetNoKernelStamps.
var noKernelStamps atomic.Bool

// SetNoKernelStamps makes every connection set up until restore is called
// (the reactor's and StampedConns) read without the kernel's receive
// stamps, as on a system that gives
// none: each read is stamped when it returned (Read.Kernel false), so a
// test can check what a late read's figures carry there. For tests only.
func SetNoKernelStamps() (restore func()) {
	old := noKernelStamps.Swap(true)
	return func() { noKernelStamps.Store(old) }
}

// reactor waits on one epoll set and serves its connections' reads.
type reactor struct {
	client  *Client
	epfd    int
	file    *os.File        // epfd
	rc      syscall.RawConn // to wait on epfd in the runtime's poller; nil: in epoll_wait
	wakeFD  int             // an eventfd that stop writes to
	stopped atomic.Bool

	mu    sync.RWMutex
	conns map[int32]*conn

	buf []byte
	oob []byte // control messages (the receive time) of a read
	// more holds the connections whose last serve ran out of its read
	// budget with bytes left, to be served again after the next batch.
	more, moreNext []*conn
	events         []unix.EpollEvent
	// ticks is the tick policy: ticks.tick the current tick (see ticker).
	ticks ticker
	// parked says the current batch was collected after parking, woke
	// when it returned (see loop); batchWakeLag is the longest its reads'
	// last bytes came before the wake-up, prevWakeLag the last parked
	// batch's (a machine late to wake is late again).
	parked                    bool
	woke                      time.Time
	batchWakeLag, prevWakeLag time.Duration
	// base is the earliest time the events of the current batch can have
	// become ready (see loop); scan and emptyScan are set by wait.
	base, scan, emptyScan time.Time
	// handed says a call ended since the reactor last looked for events:
	// its caller is runnable (see wait).
	handed bool
}

func newReactor(c *Client) (*reactor, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	// Where the reactor waits when nothing is ready. With two or more Ps
	// it blocks in epoll_wait itself: a thread parked there wakes only
	// for the reactor. Registered with the runtime's poller instead, the
	// epoll set would wake the runtime's idle thread at every socket that
	// becomes ready, while the reactor is busy or ticking too, only for it
	// to find nothing to run (a context switch per token: a third of the
	// client's CPU at 1,000 streams). With one P the set goes to the
	// runtime's poller all the same: a blocking call would hold the only
	// P until sysmon takes it back, and sends would wait for that.
	inPoller := parkInPoller()
	if inPoller {
		// Non-blocking before os.NewFile, which then hands it to the
		// runtime's poller.
		if err := unix.SetNonblock(epfd, true); err != nil {
			unix.Close(epfd)
			return nil, fmt.Errorf("epoll: %w", err)
		}
	}
	file := os.NewFile(uintptr(epfd), "epoll")
	var rc syscall.RawConn
	if inPoller {
		if rc, err = file.SyscallConn(); err != nil {
			file.Close()
			return nil, fmt.Errorf("epoll: %w", err)
		}
	}
	wfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wfd)}); err != nil {
		file.Close()
		unix.Close(wfd)
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	return &reactor{client: c, epfd: epfd, file: file, rc: rc, wakeFD: wfd, conns: map[int32]*conn{},
		buf: make([]byte, 64<<10), oob: make([]byte, 128), events: make([]unix.EpollEvent, 256)}, nil
}

// register adds cn to the epoll set, edge-triggered.
func (r *reactor) register(cn *conn) error {
	r.mu.Lock()
	r.conns[int32(cn.fd)] = cn
	r.mu.Unlock()
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(cn.fd)}
	if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, cn.fd, &ev); err != nil {
		r.mu.Lock()
		delete(r.conns, int32(cn.fd))
		r.mu.Unlock()
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	return nil
}

// closeConn closes cn's socket (closing removes it from the epoll set).
func (r *reactor) closeConn(cn *conn) {
	r.mu.Lock()
	if r.conns[int32(cn.fd)] == cn {
		delete(r.conns, int32(cn.fd))
	}
	r.mu.Unlock()
	cn.mu.Lock()
	if !cn.closed {
		cn.closed = true
		unix.Close(cn.fd)
	}
	cn.mu.Unlock()
}

func (r *reactor) stop() {
	r.stopped.Store(true)
	var one = [8]byte{1}
	_, _ = unix.Write(r.wakeFD, one[:])
}

func (r *reactor) close() {
	r.mu.Lock()
	conns := r.conns
	r.conns = map[int32]*conn{}
	r.mu.Unlock()
	for _, cn := range conns {
		cn.mu.Lock()
		if !cn.closed {
			cn.closed = true
			unix.Close(cn.fd)
		}
		cn.mu.Unlock()
	}
	unix.Close(r.wakeFD)
	r.file.Close()
}

// loop waits for ready sockets and serves them until stop.
//
// Waking costs more than reading (a context switch each time the process
// goes idle), so when events come faster than Tick the reactor stops
// waiting for each: it sleeps to the next tick and collects what became
// ready meanwhile in one batch. Reads are still stamped one by one; what a
// tick adds is the time data waited for it, which the read lag bounds.
//
// Read lag: the events of a batch became ready after the previous batch's
// collecting epoll_wait scanned the ready list, unless that one was
// truncated (it returned as many events as it had room for), in which case
// they may be older still. So a batch's base, the earliest its events can
// have become ready, is the previous base after a truncated batch, else the
// start of the previous collecting call. A batch collected after parking
// came after the last scan that found nothing, and woke the reactor as its
// first socket became ready, but how soon is not known: a loaded machine's
// runtime wakes a parked goroutine tens of milliseconds late (sysmon polls
// the network every 10 ms when every P is busy). The batch's own reads say
// how late: epoll lists ready sockets in the order they became ready, and
// each read's kernel stamp shows how long before the wake-up its last
// bytes came. So a parked batch's base is its return less the longest such
// wait its reads have shown so far, or the last parked batch's if longer
// (a machine late to wake is late again), and never before the empty scan.
// A read without a kernel stamp shows nothing of how late the wake-up
// was, so its base stays the empty scan. A read's bound is its stamp (the
// kernel's, else its own time) less that base: how much earlier than its
// stamp its first bytes may have come.
// For events a server wrote at once after a pause it is the wake-up's
// latency, not the pause. What it can miss: a read whose later bytes came
// just before a late wake-up, first in a parked batch after a prompt one.
func (r *reactor) loop() {
	defer r.client.wg.Done()
	prevRet := time.Time{}
	prevScan := time.Now()
	prevTrunc, dense := false, false
	lastExpire := time.Now()
	r.ticks = newTicker(r.client.cfg.Tick)
	for !r.stopped.Load() {
		if dense {
			if d := r.ticks.tick - time.Since(prevRet); d > 0 {
				nanosleep(d)
			}
		}
		// With connections still to finish reading, look for new events
		// without waiting.
		n, parked, err := r.wait(len(r.more) == 0)
		ret := time.Now()
		if d := wakeStall.Load(); d > 0 && n > 0 {
			time.Sleep(time.Duration(d))
		}
		if err != nil {
			// The epoll set is broken: nothing more can be read.
			r.failAll(fmt.Errorf("epoll_wait: %w", err))
			return
		}
		if r.parked {
			r.prevWakeLag = r.batchWakeLag
		}
		r.parked = parked
		switch {
		case parked:
			r.base, r.woke, r.batchWakeLag = r.emptyScan, ret, 0
		case prevTrunc:
		default:
			r.base = prevScan
		}
		prevScan = r.scan
		// Dense: this batch came within two ticks of the last (one tick
		// and the work of a batch, when ticking).
		dense = r.ticks.tick > 0 && n > 0 && ret.Sub(prevRet) < 2*r.ticks.tick
		prevRet, prevTrunc = ret, n == len(r.events)
		for i := range n {
			ev := &r.events[i]
			if ev.Fd == int32(r.wakeFD) {
				continue
			}
			r.mu.RLock()
			cn := r.conns[ev.Fd]
			r.mu.RUnlock()
			if cn != nil {
				r.serve(cn, ev.Events)
			}
		}
		// Those left with bytes to read after their budget: one more
		// budget each, in turn with the batch's.
		r.more, r.moreNext = r.moreNext[:0], r.more
		for _, cn := range r.moreNext {
			cn.more = false
		}
		for _, cn := range r.moreNext {
			if cl := cn.call.Load(); cl != nil {
				r.read(cn, cl, cn.ending)
			}
		}
		clear(r.moreNext)
		// The tick follows the streams (see ticker).
		r.ticks.batched()
		if ret.Sub(lastExpire) > time.Second {
			lastExpire = ret
			r.ticks.second()
			r.client.expireIdle(r, ret)
		}
	}
}

// nanosleep sleeps the thread for d, holding its P (a tick is shorter than
// the runtime's timers resolve when the process is idle).
func nanosleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_, _, _ = unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0) // EINTR ends it early
}

// wait returns the next batch of events: at once if some are ready, else
// once some are (stop makes the set ready), with parked true. r.scan is
// when the call that collected them started to scan, and, when parked,
// r.emptyScan when the last one that found none did. With block false it
// never waits.
func (r *reactor) wait(block bool) (n int, parked bool, err error) {
	r.scan = time.Now()
	n, err = r.poll()
	if n > 0 || err != nil || !block {
		return n, false, err
	}
	if r.rc == nil && r.handed {
		// Before blocking, the callers whose responses ended run on this
		// thread's P (each sends its next request at once, as a client
		// reading and writing in one loop does) rather than wait for the
		// runtime to take the P from a thread blocked in a system call;
		// what they send may be answered by the next look.
		r.handed = false
		runtime.Gosched()
		r.scan = time.Now()
		if n, err = r.poll(); n > 0 || err != nil {
			return n, false, err
		}
	}
	r.emptyScan = r.scan
	if r.rc == nil {
		for {
			// A blocking system call: the runtime hands the P on if it
			// has other work meanwhile. What it returns was scanned as
			// it returned.
			n, _, e := syscall.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(r.epfd), uintptr(unsafe.Pointer(&r.events[0])), uintptr(len(r.events)), ^uintptr(0), 0, 0)
			r.scan = time.Now()
			switch e {
			case 0:
				return int(n), true, nil
			case unix.EINTR:
				continue
			}
			return 0, true, e
		}
	}
	return r.waitInPoller()
}

// waitInPoller is wait's blocking part in the Go runtime's poller (see
// reactor.rc). It is wait's own function so that the variables its
// closure shares live on the heap only when the reactor parks there.
func (r *reactor) waitInPoller() (n int, parked bool, err error) {
	werr := r.rc.Read(func(uintptr) bool {
		r.scan = time.Now()
		n, err = r.poll()
		if n == 0 && err == nil {
			r.emptyScan = r.scan
		}
		return n > 0 || err != nil
	})
	if werr != nil {
		return 0, true, werr
	}
	return n, true, err
}

// poll is epoll_wait without waiting, as a raw system call (it never
// blocks, so the runtime need not know).
func (r *reactor) poll() (int, error) {
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(r.epfd), uintptr(unsafe.Pointer(&r.events[0])), uintptr(len(r.events)), 0, 0, 0)
		switch e {
		case 0:
			return int(n), nil
		case unix.EINTR:
			continue
		}
		return 0, e
	}
}

// write is write(2) as a raw system call: the socket never blocks, so the
// runtime need not hand the thread's P over (which keeps sysmon polling).
func write(fd int, p []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

// recv reads fd into the reactor's buffer with recvmsg(2), as a raw
// system call (the socket never blocks), and returns the kernel's receive
// time of the last byte read (Unix nanoseconds), or 0 when the socket gave
// none (see enableStamps).
func (r *reactor) recv(fd int) (int, int64, error) {
	n, kts, e := recvStamped(fd, r.buf, r.oob[:])
	if e != 0 {
		return -1, 0, e
	}
	return n, kts, nil
}

// stampOf finds an SCM_TIMESTAMPNS control message in oob.
func stampOf(oob []byte) int64 {
	const hdr = int(unsafe.Sizeof(unix.Cmsghdr{}))
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= hdr+int(unsafe.Sizeof(unix.Timespec{})) {
			ts := (*unix.Timespec)(unsafe.Pointer(&oob[hdr]))
			return ts.Nano()
		}
		oob = oob[min(cmsgAlign(l), len(oob)):]
	}
	return 0
}

func cmsgAlign(n int) int {
	const a = int(unsafe.Sizeof(uintptr(0)))
	return (n + a - 1) &^ (a - 1)
}

// enableStamps asks the kernel for each read's receive time
// (SO_TIMESTAMPNS); a socket that refuses is read with read-time stamps.
func enableStamps(fd int) {
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
}

const (
	evRead = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLHUP | unix.EPOLLERR
	evEnd  = unix.EPOLLRDHUP | unix.EPOLLHUP | unix.EPOLLERR
)

// serve handles one readiness event of cn.
func (r *reactor) serve(cn *conn, events uint32) {
	cl := cn.call.Load()
	if cl == nil {
		if events&evRead == 0 {
			return // an idle socket's send buffer drained
		}
		// Data or an end on an idle connection: the server closed it (or
		// sent what nobody asked for). Unless a request took it meanwhile,
		// it is done.
		if r.client.takeIdle(cn) {
			r.closeConn(cn)
			return
		}
		if cl = cn.call.Load(); cl == nil {
			return
		}
	}
	if events&unix.EPOLLOUT != 0 && cn.blocked.Load() {
		select {
		case cn.writable <- struct{}{}:
		default:
		}
	}
	if events&evRead != 0 {
		r.read(cn, cl, events&evEnd != 0)
	}
}

// readBudget is how many reads that fill the buffer a connection gets in
// one turn: a stream that keeps the socket full (a fast or endless one)
// then leaves the reactor to the others' streams, whose stamps and idle
// times would otherwise wait for it, and comes back on the more list.
const readBudget = 4

// errAborted ends a call Do gave up on (its context ended, or it found
// the server idle).
var errAborted = errors.New("rawhttp: request aborted")

// readingNow in a call's lastRead says the reactor is reading its socket.
const readingNow = -1

// afterRecvHook, when set (by tests), runs after each read of a call's
// socket, with what the read returned.
var afterRecvHook atomic.Pointer[func(n int)]

// read reads cn once (more while reads fill the buffer, up to readBudget,
// or when the peer has hung up, so that the end is not missed) and parses
// what came.
func (r *reactor) read(cn *conn, cl *call, ending bool) {
	for budget := readBudget; ; budget-- {
		if cl.aborted.Load() {
			// Do is waiting for it: what is left unread is not.
			r.finish(cn, cl, errAborted, false, time.Now())
			return
		}
		if budget == 0 {
			if !cn.more {
				cn.more, cn.ending = true, ending
				r.more = append(r.more, cn)
			}
			return
		}
		// A read under way is activity: Do's idle timeout, which may look
		// at the socket just after this read empties it, must not take
		// the server for idle (see Client.Do).
		prev := cl.lastRead.Swap(readingNow)
		n, kts, err := r.recv(cn.fd)
		if h := afterRecvHook.Load(); h != nil {
			(*h)(n)
		}
		at := time.Now()
		if n <= 0 {
			cl.lastRead.Store(prev)
		}
		if n > 0 {
			w := at.UnixNano() - kts
			kernel := kts > 0 && w >= 0 && w < int64(10*time.Second)
			if kernel && r.parked {
				r.batchWakeLag = max(r.batchWakeLag, time.Duration(w)-at.Sub(r.woke))
			}
			base := r.base
			if r.parked && kernel {
				// (Without the kernel's time nothing shows how late the
				// wake-up was: such a read's bound counts from the empty
				// scan.)
				if b := r.woke.Add(-max(r.prevWakeLag, r.batchWakeLag)); b.After(base) {
					base = b
				}
			}
			if cl.drainedAt.After(base) {
				// The call's last read that emptied the socket: nothing
				// this one reads is older.
				base = cl.drainedAt
			}
			// Bound: how much earlier than the read's stamp its first
			// bytes may have come (see Read.Bound).
			rd := Read{At: at, Bound: at.Sub(base)}
			lag := rd.Bound
			if kernel {
				// The kernel's receive time, on the monotonic clock: at
				// less the wait it measured (a wall-clock step between
				// the two would show as a wait out of range, and the
				// read's own time is used).
				rd.At, rd.Kernel, lag = at.Add(-time.Duration(w)), true, time.Duration(w)
				rd.Bound = max(rd.At.Sub(base), 0)
			}
			cl.readLag = max(cl.readLag, lag)
			if budget == readBudget && cl.reads > 0 {
				// A stream's pace, once it is kept: three short gaps in
				// a row (one alone is most often a stream's headers, a
				// role-only event, or its usage and [DONE] right after
				// its last token).
				g := at.Sub(cl.lastAt)
				if cl.short++; !r.ticks.keepsPace(g) {
					cl.short = 0
				}
				if cl.short >= 3 {
					r.ticks.paced(g)
				}
			}
			cl.lastAt = at
			if n < len(r.buf) {
				cl.drainedAt = at
			}
			if cl.reads == 0 {
				cl.firstByte = rd.At
			}
			cl.reads++
			rd.N = cl.reads
			if lag > LateRead {
				cl.late++
			}
			cl.lastRead.Store(int64(at.Sub(epoch)))
			cl.gotBytes = true
			used, done, perr := cn.p.feed(r.buf[:n], rd, cl.h)
			switch {
			case perr != nil:
				r.finish(cn, cl, perr, false, at)
				return
			case done && used < n:
				// Bytes no request asked for follow a complete response
				// (a stray CRLF, or garbage): the response stands, as
				// net/http has it, and the connection is not reused.
				r.finish(cn, cl, nil, false, at)
				return
			case done:
				r.finish(cn, cl, nil, cn.p.keepAlive && !ending, at)
				return
			}
			r.ticks.openRead()
			if n < len(r.buf) && !ending {
				return // drained: a short read empties a stream socket
			}
			continue
		}
		switch {
		case n == 0 && err == nil:
			r.finish(cn, cl, cn.p.eof(), false, at)
			return
		case errors.Is(err, unix.EAGAIN):
			return
		case errors.Is(err, unix.EINTR):
			continue
		default:
			r.finish(cn, cl, fmt.Errorf("reading response: %w", err), false, at)
			return
		}
	}
}

// finish ends the call: its connection to the pool or closed (before Do
// hears, so that Do's next request finds it), then its verdict to Do.
func (r *reactor) finish(cn *conn, cl *call, err error, reuse bool, now time.Time) {
	cn.mu.Lock() // against an abort of cl hitting the connection's next call
	cn.call.Store(nil)
	cn.mu.Unlock()
	if !reuse || !r.client.putIdle(cn, now) {
		r.closeConn(cn)
	}
	r.ticks.ended(cl.nextWaits)
	r.handed = true
	cl.done <- err
}

// failAll fails every call in flight.
func (r *reactor) failAll(err error) {
	r.mu.RLock()
	var all []*conn
	for _, cn := range r.conns {
		all = append(all, cn)
	}
	r.mu.RUnlock()
	for _, cn := range all {
		if cl := cn.call.Load(); cl != nil {
			r.finish(cn, cl, err, false, time.Now())
		}
	}
}
