//go:build linux

package rawhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Available reports whether the reactor works here: Linux with epoll.
func Available() bool { return true }

// Client sends requests to one server over pooled keep-alive connections.
// It is safe for concurrent use. Close it to stop its reactors.
type Client struct {
	cfg      Config
	reactors []*reactor
	next     atomic.Uint32

	mu     sync.Mutex
	idle   []*conn // most recently used last
	closed bool
	wg     sync.WaitGroup // reactor goroutines

	// The context watch (see watch): the context whose end ends the
	// calls made with it, and its generation.
	watchMu sync.Mutex
	watched atomic.Pointer[ctxWatch]
}

// ctxWatch is one context the Client watches.
type ctxWatch struct {
	done <-chan struct{}
	gen  uint64
	stop func() bool
	uses atomic.Int64 // the requests that relied on it
}

// conn is one connection. Its fd is closed only by closeConn; shutdown
// (from Do, to abort a request) is done under mu so that it never hits a
// reused descriptor.
type conn struct {
	fd       int
	r        *reactor
	call     atomic.Pointer[call] // the request in flight, nil when idle
	writable chan struct{}        // EPOLLOUT edges, for a write that hit EAGAIN
	blocked  atomic.Bool          // a write is waiting on writable
	p        respParser           // the reactor's, while call is set
	idleAt   time.Time            // when it went idle (Client.mu)
	more     bool                 // on its reactor's more list, and
	ending   bool                 // whether the peer had hung up (the reactor's)

	mu     sync.Mutex
	closed bool
}

// call is one request in flight on a conn. Calls are pooled (calls): the
// reactor is done with one once it has sent its verdict on done, which Do
// always waits for.
type call struct {
	h        Handler
	done     chan error   // the reactor's verdict, once
	lastRead atomic.Int64 // since epoch, of the last read that brought bytes; readingNow during a read
	readLag  time.Duration
	reads    int
	lastAt   time.Time // the last read's return (the reactor's)
	// drainedAt is the return of the last read that emptied the socket
	// (one shorter than the buffer; the reactor's).
	drainedAt time.Time
	short     int // reads in a row that came soon after the one before
	late      int
	gotBytes  bool
	nextWaits bool        // Request.NextWaits
	firstByte time.Time   // the first read's stamp (the reactor's)
	aborted   atomic.Bool // Do gave up on it: the reactor ends it at its next read

	// Kept for the whole Do, across its attempts (reset leaves them):
	// timer is Request.Timeout's, which calls expire; expired says it
	// has; cn is the connection of the current attempt, for expire;
	// watch is the generation of the Client's context watch that ends
	// the call when its context does (0: Do waits on the context itself).
	timer   *time.Timer
	expired atomic.Bool
	cn      atomic.Pointer[conn]
	watch   atomic.Uint64
	// waiting says the attempt's request is written whole: an end
	// (expire, the watch) may abort it; before, while Do writes, it only
	// wakes a write waiting for room (wake), and Do aborts once written
	// (an abort could close the socket under the write).
	waiting atomic.Bool
	wake    chan struct{}
}

// calls pools calls with their done channel and timer.
var calls = sync.Pool{New: func() any { return &call{done: make(chan error, 1), wake: make(chan struct{}, 1)} }}

// reset readies a pooled call for an attempt of a request to h.
func (cl *call) reset(h Handler) {
	cl.h, cl.readLag, cl.reads, cl.lastAt, cl.drainedAt = h, 0, 0, time.Time{}, time.Time{}
	cl.short, cl.late, cl.gotBytes, cl.firstByte = 0, 0, false, time.Time{}
	cl.lastRead.Store(0)
	cl.aborted.Store(false)
	cl.waiting.Store(false)
	select {
	case <-cl.wake:
	default:
	}
}

// expire is Request.Timeout's end: the call's attempt ends (see end).
func (cl *call) expire() {
	cl.expired.Store(true)
	cl.end()
}

// end ends the call's attempt after its timeout or its context ended: an
// attempt whose request is written is aborted; one being written is
// woken if waiting for room, and Do aborts it once written; one not yet
// on a connection sees why as it gets one.
func (cl *call) end() {
	cn := cl.cn.Load()
	if cn == nil {
		return
	}
	if cl.waiting.Load() {
		cn.abort(cl)
		return
	}
	select {
	case cl.wake <- struct{}{}:
	default:
	}
}

// New returns a Client for cfg; its reactors start at once.
func New(cfg Config) (*Client, error) {
	cfg.defaults()
	c := &Client{cfg: cfg}
	for range cfg.Reactors {
		r, err := newReactor(c)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.reactors = append(c.reactors, r)
		c.wg.Add(1)
		go r.loop()
	}
	return c, nil
}

// Close closes idle connections and stops the reactors, once every Do has
// returned.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	idle := c.idle
	c.idle = nil
	c.mu.Unlock()
	if w := c.watched.Load(); w != nil {
		w.stop()
	}
	for _, cn := range idle {
		cn.r.closeConn(cn)
	}
	for _, r := range c.reactors {
		r.stop()
	}
	c.wg.Wait()
	for _, r := range c.reactors {
		r.close()
	}
	return nil
}

// errServerClosedIdle is a reused connection that failed before the
// request was written whole: the server had closed it, and no request it
// could act on reached it, so the request is sent again on a new one, as
// net/http does.
var errServerClosedIdle = errors.New("rawhttp: server closed an idle connection")

// Do sends req and returns when its response has been read (or failed).
// The Handler has been called for all of it by then. A request is sent
// again, on a new connection, only when a reused connection failed before
// the request was written whole (the server had closed it while idle):
// once written, the server may have acted on it, and a failure is the
// request's (a retry is the caller's to decide and count), as net/http
// has it for a POST.
func (c *Client) Do(ctx context.Context, req *Request) (Result, error) {
	cl := calls.Get().(*call)
	cl.nextWaits = req.NextWaits
	cl.expired.Store(false)
	cl.cn.Store(nil)
	// The context: watched by the Client (no wait on it per request) when
	// it is the one it watches.
	cl.watch.Store(c.watch(ctx))
	// Request.Timeout: the call's timer (reused) and, for a dial, the
	// deadline.
	var deadline time.Time
	if req.Timeout > 0 {
		deadline = time.Now().Add(req.Timeout)
		if cl.timer == nil {
			cl.timer = time.AfterFunc(req.Timeout, cl.expire)
		} else {
			cl.timer.Reset(req.Timeout)
		}
	}
	defer func() {
		// A call whose timer fired may still be in expire: it is let go,
		// not reused.
		if cl.timer == nil || req.Timeout <= 0 || cl.timer.Stop() {
			calls.Put(cl)
		}
	}()
	for attempt := 0; ; attempt++ {
		cl.reset(req.Handler)
		res, err := c.do(ctx, req, cl, attempt > 0, deadline)
		if errors.Is(err, errServerClosedIdle) && attempt < 2 {
			continue
		}
		if errors.Is(err, errServerClosedIdle) {
			err = io.ErrUnexpectedEOF
		}
		return res, err
	}
}

// do is one attempt of Do, with cl as its call; deadline is the request's
// end (zero when unbounded).
func (c *Client) do(ctx context.Context, req *Request, cl *call, fresh bool, deadline time.Time) (Result, error) {
	cn, reused, dt, err := c.get(ctx, cl, req.Head, fresh, deadline)
	if err != nil {
		return Result{}, err
	}
	// cn carries cl now: from here expire and the context watch find it
	// there; an end that came before is seen once the request is written.
	cl.cn.Store(cn)
	res := Result{Reused: reused, Dial: dt, Ready: time.Now()}
	if werr := cn.write(ctx, req.Raw, cl); werr != nil {
		cn.abort(cl)
		<-cl.done
		if cl.expired.Load() {
			return res, fmt.Errorf("writing request: %w", ErrTimeout)
		}
		if reused && !cl.gotBytes && ctx.Err() == nil {
			return res, errServerClosedIdle
		}
		if ctx.Err() != nil {
			return res, fmt.Errorf("writing request: %w", context.Cause(ctx))
		}
		return res, fmt.Errorf("writing request: %w", werr)
	}
	res.Written = time.Now()
	// Written: from now an end aborts the call; one that came during the
	// write is seen here.
	cl.waiting.Store(true)
	if cl.expired.Load() || cl.watch.Load() != 0 && ctx.Err() != nil {
		cn.abort(cl)
	}
	var idle <-chan time.Time
	var timer *time.Timer
	if req.IdleTimeout > 0 {
		cl.lastRead.Store(int64(time.Since(epoch))) // only the idle timeout reads it
		timer = time.NewTimer(req.IdleTimeout)
		defer timer.Stop()
		idle = timer.C
	}
	// The reactor's verdict. The timeout (expire) and a watched context
	// abort the call, which the verdict then follows: a single channel
	// to wait on, unless the context is not watched or there is an idle
	// timeout.
	var done <-chan struct{}
	if cl.watch.Load() == 0 {
		done = ctx.Done()
	}
	idleOut := false
	if done == nil && idle == nil {
		err = <-cl.done
	} else {
	wait:
		for {
			select {
			case err = <-cl.done:
				break wait
			case <-done:
				cn.abort(cl)
				done = nil
			case <-idle:
				last := cl.lastRead.Load()
				if last == readingNow {
					// The reactor is reading what the server just sent.
					timer.Reset(req.IdleTimeout)
					continue
				}
				quiet := time.Since(epoch) - time.Duration(last)
				if quiet < req.IdleTimeout {
					timer.Reset(req.IdleTimeout - quiet)
					continue
				}
				if cn.unread(cl) || cl.lastRead.Load() != last {
					// The server sent what the reactor has not read yet
					// (it was busy with other streams, or the machine with
					// other work), or what it began reading as the socket
					// was looked at (it marks a read before it makes it):
					// the server was not idle.
					timer.Reset(req.IdleTimeout)
					continue
				}
				cn.abort(cl)
				idle, idleOut = nil, true
			}
		}
	}
	res.ReadLag, res.Reads, res.LateReads, res.FirstByte = cl.readLag, cl.reads, cl.late, cl.firstByte
	switch {
	case err == nil:
		return res, nil // complete, even if its time, idle time or context ended as it came
	case idleOut:
		return res, ErrIdleTimeout
	case cl.expired.Load():
		return res, ErrTimeout
	case ctx.Err() != nil:
		return res, context.Cause(ctx)
	case errors.Is(err, io.EOF):
		// The request was written: a connection closed or reset now,
		// even before any byte of a response, fails it. (It was sent
		// again, up to twice, when the connection was a reused one: a
		// server that read it and then reset got it two or three
		// times, with no retry asked for.)
		return res, io.ErrUnexpectedEOF // a connection closed with no response
	}
	return res, err
}

// watch returns the generation of the Client's watch of ctx, watching it
// if it watches no live context (0: ctx is left to Do, which then waits
// on it as well as on the reactor). A run passes one context to all its
// requests: watched once, its end ends every call made with it (endCalls)
// and no request waits on it.
func (c *Client) watch(ctx context.Context) uint64 {
	done := ctx.Done()
	if done == nil || !c.cfg.WatchContext {
		return 0 // it never ends, or each request has its own
	}
	if w := c.watched.Load(); w != nil && w.done == done {
		w.uses.Add(1)
		return w.gen
	}
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	w := c.watched.Load()
	if w != nil && w.done == done {
		w.uses.Add(1)
		return w.gen
	}
	var gen uint64 = 1
	if w != nil {
		select {
		case <-w.done:
		default:
			return 0 // another context, still live, is watched
		}
		if w.uses.Load() < 2 {
			// A context of one request: so will the next be, most
			// likely, and a watch each would cost more than it saves.
			return 0
		}
		gen = w.gen + 1
	}
	nw := &ctxWatch{done: done, gen: gen}
	nw.uses.Store(1)
	nw.stop = context.AfterFunc(ctx, func() { c.endCalls(gen) })
	c.watched.Store(nw)
	return gen
}

// endCalls ends the calls made with the context of watch generation gen,
// which has ended: one written is aborted, one being written woken if
// waiting for room (Do aborts it once written). Under the connection's
// lock, the call on it cannot finish, nor its call be another request's.
func (c *Client) endCalls(gen uint64) {
	for _, r := range c.reactors {
		r.mu.RLock()
		conns := make([]*conn, 0, len(r.conns))
		for _, cn := range r.conns {
			conns = append(conns, cn)
		}
		r.mu.RUnlock()
		for _, cn := range conns {
			cn.mu.Lock()
			if cl := cn.call.Load(); cl != nil && !cn.closed && cl.watch.Load() == gen {
				if cl.waiting.Load() {
					cl.aborted.Store(true)
					_ = unix.Shutdown(cn.fd, unix.SHUT_RDWR)
				} else {
					select {
					case cl.wake <- struct{}{}:
					default:
					}
				}
			}
			cn.mu.Unlock()
		}
	}
}

// epoch is the origin of the monotonic nanosecond stamps kept in atomics.
var epoch = time.Now()

// get returns a connection with cl set as its call: an idle one unless
// fresh, else a new one, opened by deadline if not zero, with the phases
// of its opening.
func (c *Client) get(ctx context.Context, cl *call, head, fresh bool, deadline time.Time) (*conn, bool, DialTimes, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, false, DialTimes{}, ErrClosed
	}
	for !fresh && len(c.idle) > 0 {
		cn := c.idle[len(c.idle)-1]
		c.idle = c.idle[:len(c.idle)-1]
		c.mu.Unlock()
		if !alive(cn.fd) {
			// The server closed it while it was idle, and the reactor
			// has not seen it yet: the request goes on another, before
			// any of it is written.
			cn.r.closeConn(cn)
			c.mu.Lock()
			if c.closed {
				c.mu.Unlock()
				return nil, false, DialTimes{}, ErrClosed
			}
			continue
		}
		cn.p.reset(head)
		cn.call.Store(cl)
		return cn, true, DialTimes{}, nil
	}
	c.mu.Unlock()
	dctx := ctx
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		dctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	cn, dt, err := c.dial(dctx)
	if err != nil {
		return nil, false, dt, dialError(ctx, deadline, err, time.Now())
	}
	cn.p.reset(head)
	cn.call.Store(cl)
	if err := cn.r.register(cn); err != nil {
		unix.Close(cn.fd)
		return nil, false, dt, err
	}
	return cn, false, dt, nil
}

// dialError is the error of a dial that failed at now: a timeout of the
// request (ErrTimeout, keeping the dial's message) once the request's
// deadline has come, unless the caller's context ended the dial. It asks the
// clock, not the dial's context: the dialer's connect deadline and the
// context's timer are two timers, and on a loaded machine the dial can fail
// with "i/o timeout" before the context knows its time is over.
func dialError(ctx context.Context, deadline time.Time, err error, now time.Time) error {
	if ctx.Err() == nil && !deadline.IsZero() && !now.Before(deadline) {
		return timeoutError{err}
	}
	return err
}

// dial connects with net.Dialer (timeouts, context, TCP_NODELAY) and takes
// the socket over from the Go runtime's poller. Its phases: the name
// lookup ends when the dialer makes its first socket (its Control hook),
// the connect is from then to the dial's return.
func (c *Client) dial(ctx context.Context) (*conn, DialTimes, error) {
	var dt DialTimes
	start := time.Now()
	// The first socket's time, as an offset from start (the dialer may
	// try two address families at once, on two goroutines).
	var sock atomic.Int64
	d := net.Dialer{Timeout: c.cfg.DialTimeout, KeepAlive: 30 * time.Second, Resolver: c.cfg.Resolver,
		ControlContext: func(context.Context, string, string, syscall.RawConn) error {
			sock.CompareAndSwap(0, max(int64(time.Since(start)), 1))
			return nil
		}}
	nc, err := d.DialContext(ctx, "tcp", c.cfg.Addr)
	if err != nil {
		return nil, dt, err
	}
	defer nc.Close()
	total := time.Since(start)
	lookup := min(time.Duration(sock.Load()), total)
	if host, _, herr := net.SplitHostPort(c.cfg.Addr); herr == nil && net.ParseIP(host) == nil {
		dt.DNS, dt.Lookup = lookup, true
	}
	dt.Connect = total - lookup
	cn, err := c.takeOver(nc)
	return cn, dt, err
}

// takeOver takes a dialed connection's socket over from the Go runtime's
// poller.
func (c *Client) takeOver(nc net.Conn) (*conn, error) {
	sc, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("taking over a connection: %w", err)
	}
	fd := -1
	var derr error
	if err := sc.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, fmt.Errorf("taking over a connection: %w", err)
	}
	if derr != nil {
		return nil, fmt.Errorf("taking over a connection: %w", derr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("taking over a connection: %w", err)
	}
	if !c.cfg.ReadStamps && !noKernelStamps.Load() {
		enableStamps(fd)
	}
	r := c.reactors[int(c.next.Add(1))%len(c.reactors)]
	return &conn{fd: fd, r: r, writable: make(chan struct{}, 1)}, nil
}

// alive says whether an idle connection can carry a request: the server
// has neither closed it (an end of file or a reset waits in the socket)
// nor sent bytes no request asked for. It peeks, reading nothing, as a raw
// system call (no allocation).
func alive(fd int) bool {
	var b [1]byte
	_, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), 1, unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
	return e == unix.EAGAIN
}

// putIdle returns a connection whose response is complete to the pool.
func (c *Client) putIdle(cn *conn, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	cn.idleAt = now
	c.idle = append(c.idle, cn)
	return true
}

// takeIdle removes cn from the pool if it is there.
func (c *Client) takeIdle(cn *conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.idle {
		if x == cn {
			c.idle = append(c.idle[:i], c.idle[i+1:]...)
			return true
		}
	}
	return false
}

// expireIdle closes the connections of r idle for longer than the
// configured timeout.
func (c *Client) expireIdle(r *reactor, now time.Time) {
	var old []*conn
	c.mu.Lock()
	keep := c.idle[:0]
	for _, cn := range c.idle {
		if cn.r == r && now.Sub(cn.idleAt) > c.cfg.IdleConnTimeout {
			old = append(old, cn)
		} else {
			keep = append(keep, cn)
		}
	}
	clear(c.idle[len(keep):])
	c.idle = keep
	c.mu.Unlock()
	for _, cn := range old {
		r.closeConn(cn)
	}
}

// write writes b whole, waiting for the reactor's word when the socket's
// buffer is full, or for cl's end (its timeout, its context).
func (cn *conn) write(ctx context.Context, b []byte, cl *call) error {
	for len(b) > 0 {
		n, err := write(cn.fd, b)
		if n > 0 {
			b = b[n:]
		}
		switch {
		case err == nil:
		case errors.Is(err, unix.EAGAIN):
			// Say so, then try once more: an edge between the write and
			// the flag would otherwise be missed.
			cn.blocked.Store(true)
			if n, err = write(cn.fd, b); n > 0 || !errors.Is(err, unix.EAGAIN) {
				cn.blocked.Store(false)
				if n > 0 {
					b = b[n:]
				}
				if err != nil && !errors.Is(err, unix.EINTR) {
					return err
				}
				continue
			}
			select {
			case <-cn.writable:
			case <-ctx.Done():
				cn.blocked.Store(false)
				return context.Cause(ctx)
			case <-cl.wake:
				if cl.expired.Load() {
					cn.blocked.Store(false)
					return ErrTimeout
				}
				// A wake left from an earlier attempt or request, or a
				// context the select sees too.
			}
			cn.blocked.Store(false)
		case errors.Is(err, unix.EINTR):
		default:
			return err
		}
	}
	return nil
}

// abort shuts the connection down if cl is still its call: the reactor
// then sees its end and finishes cl. A call the reactor has finished
// meanwhile is left alone, and so is the connection, which may already
// carry another request.
func (cn *conn) abort(cl *call) {
	cl.aborted.Store(true)
	cn.mu.Lock()
	if !cn.closed && cn.call.Load() == cl {
		_ = unix.Shutdown(cn.fd, unix.SHUT_RDWR)
	}
	cn.mu.Unlock()
}

// unread says whether cn's socket holds received bytes not yet read while
// cl is its call.
func (cn *conn) unread(cl *call) bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.closed || cn.call.Load() != cl {
		return false
	}
	n, err := unix.IoctlGetInt(cn.fd, unix.SIOCINQ)
	return err == nil && n > 0
}
