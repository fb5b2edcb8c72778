//go:build linux

// Command floorsim is the floor of bench/sim-compare.sh: the least a
// simulator can spend on this machine sending the streams spate sim sends,
// the same bytes (within a few) at the same times. One goroutine locked to
// its thread owns everything: an epoll instance (blocked in as a raw system
// call, keeping its P), the listening socket, the connections and a timerfd
// on the tick grid. A request is read with read(2) and parsed in place, its
// headers and role event written with one write(2); every token due by a
// tick leaves in one io_uring submission (write(2) each where io_uring is
// refused), the last token's segment carrying the usage event, [DONE] and
// the chunked body's end. No net/http, no goroutine per request, no
// metrics: what is left is the kernel's work for each request and token
// and the clock's wake-ups, which every simulator pays.
//
// Run beside spate sim and naivesim (SERVERS="naive spate floor"
// bench/sim-compare.sh) it splits spate's CPU a request into the floor and
// what net/http and Go's scheduler add. Not a server: it answers streamed
// chat completions (POST /v1/chat/completions, max_tokens from the body)
// and GET /health, parses only what it needs, and closes a connection on
// anything else. Loopback only; stops on SIGINT or SIGTERM.
//
// Usage:
//
//	floorsim -addr 127.0.0.1:18082 -ttft 50ms -itl 10ms -tick 1ms
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	iouring "github.com/spate-dev/spate/internal/uring"
)

func main() {
	var (
		addr   = flag.String("addr", "127.0.0.1:18082", "loopback address to listen on")
		ttft   = flag.Duration("ttft", 50*time.Millisecond, "time to first token")
		itl    = flag.Duration("itl", 10*time.Millisecond, "inter-token latency")
		tick   = flag.Duration("tick", time.Millisecond, "the clock's grid: a token leaves at the first tick at or after its time")
		tokens = flag.Int("tokens", 128, "tokens a stream when the request sets no max_tokens")
	)
	flag.Parse()
	ap, err := netip.ParseAddrPort(*addr)
	if err != nil || !ap.Addr().IsLoopback() || !ap.Addr().Is4() {
		log.Fatalf("floorsim: -addr %q: want a loopback IPv4 address and port, such as 127.0.0.1:18082", *addr)
	}
	if *tick <= 0 || *ttft < 0 || *itl < 0 || *tokens < 1 {
		log.Fatal("floorsim: -tick must be positive, -ttft and -itl not negative, -tokens at least 1")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	lfd, err := listen(ap)
	if err != nil {
		log.Fatalf("floorsim: listening on %s: %v", *addr, err)
	}
	s, err := newServer(lfd, *ttft, *itl, *tick, *tokens)
	if err != nil {
		log.Fatalf("floorsim: %v", err)
	}
	err = s.run(ctx)
	s.close()
	if err != nil {
		log.Fatalf("floorsim: %v", err)
	}
	// What would make its CPU figure wrong without a sign: an alarm that
	// woke for nothing (spinning), bytes that waited for a full socket.
	log.Printf("floorsim: %d requests; %d wake-ups of the alarm found nothing to send; %d writes waited for a full socket", s.requests, s.emptyTicks, s.waits)
}

// listen opens a non-blocking listening socket on ap.
func listen(ap netip.AddrPort) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Listen(fd, 4096); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// conn is one client connection.
type conn struct {
	fd    int
	in    []byte // request bytes not yet answered
	out   []byte // response bytes not yet taken by the socket
	close bool   // close once out is written (a request it does not serve)

	// The stream in flight, if total > 0.
	id      []byte // the event prefix up to the token text
	usage   bool
	prompt  int
	total   int           // tokens of the stream
	next    int           // tokens sent
	first   time.Duration // the first token's exact time, since the epoch
	dueTick int64         // the tick of the next token
	dirty   bool          // in this pass's batch
	waitOut bool          // out holds bytes a full socket did not take: watching for EPOLLOUT
}

// server is floorsim's one loop.
type server struct {
	lfd, ep, tfd    int
	ttft, itl, tick time.Duration
	tokens          int
	epoch           time.Time
	mono0           int64 // CLOCK_MONOTONIC at epoch, ns
	conns           map[int]*conn
	ring            *iouring.Ring // nil: write(2) each
	wheel           [][]*conn     // slot k%len holds the streams due at tick k (and later rounds' if the loop fell behind)
	done            int64         // last tick passed
	pending         int           // streams in the wheel
	armed           int64         // tick the timerfd is set for, or -1
	batch           []*conn
	ended           []*conn // streams that ended in this pass
	requests        int64
	emptyTicks      int64 // wake-ups of the alarm that found no token to send
	waits           int64 // writes that left bytes for a full socket (then sent on EPOLLOUT)
}

// newServer sets up the loop on the listening socket lfd, which it owns
// from then on (close closes it).
func newServer(lfd int, ttft, itl, tick time.Duration, tokens int) (*server, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		unix.Close(ep)
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	s := &server{lfd: lfd, ep: ep, tfd: tfd, ttft: ttft, itl: itl, tick: tick, tokens: tokens, conns: map[int]*conn{}, armed: -1}
	// CLOCK_MONOTONIC at the epoch, never below the truth: the time since
	// the epoch is read before the clock, so an alarm is never early (see
	// sim's monoEpoch; read the other way round, under valgrind the loop
	// woke again and again before its tick).
	var ts unix.Timespec
	s.epoch = time.Now()
	since := time.Since(s.epoch)
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		s.close()
		return nil, fmt.Errorf("clock_gettime: %w", err)
	}
	s.mono0 = ts.Nano() - int64(since)
	// A slot for every tick a stream can wait for its next token, and two more.
	s.wheel = make([][]*conn, int(max(ttft, itl)/tick)+3)
	if r, err := iouring.New(512, 0, 0); err == nil {
		if r.Supports(iouring.OpSend) == nil {
			s.ring = r
		} else {
			r.Close()
		}
	}
	for _, fd := range []int{lfd, tfd} {
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			s.close()
			return nil, fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	return s, nil
}

// close closes every descriptor the loop holds.
func (s *server) close() {
	for fd := range s.conns {
		unix.Close(fd)
	}
	if s.ring != nil {
		s.ring.Close()
	}
	unix.Close(s.tfd)
	unix.Close(s.ep)
	unix.Close(s.lfd)
}

// run serves until ctx is done, on its own thread.
func (s *server) run(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	evs := make([]unix.EpollEvent, 256)
	buf := make([]byte, 64<<10)
	for ctx.Err() == nil {
		// A raw system call keeps the P while it sleeps (at most 100 ms, so
		// a stop is seen); a signal ends the sleep at once.
		n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(s.ep), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 100, 0, 0)
		switch e {
		case 0:
		case unix.EINTR:
			n = 0
		default:
			return fmt.Errorf("epoll_pwait: %w", e)
		}
		ticked := false
		for _, ev := range evs[:n] {
			switch fd := int(ev.Fd); fd {
			case s.lfd:
				if err := s.accept(); err != nil {
					return err
				}
			case s.tfd:
				ticked = true
			default:
				if c := s.conns[fd]; c != nil && ev.Events&unix.EPOLLOUT != 0 {
					s.writeNow(c)
				}
				if c := s.conns[fd]; c != nil && ev.Events&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
					s.readConn(c, buf)
				}
			}
		}
		if ticked {
			s.pass()
		}
		s.arm()
	}
	return nil
}

// now is the time since the epoch.
func (s *server) now() time.Duration { return time.Since(s.epoch) }

// due is the time of tick k.
func (s *server) due(k int64) time.Duration { return time.Duration(k) * s.tick }

// tickOf is the first tick at or after d.
func (s *server) tickOf(d time.Duration) int64 { return int64((d + s.tick - 1) / s.tick) }

// accept takes every connection waiting on the listening socket. A failure
// other than an empty queue or an aborted connection (such as too many open
// files) stops floorsim: the listening socket would stay readable and the
// loop spin.
func (s *server) accept() error {
	for {
		fd, _, err := unix.Accept4(s.lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch {
		case err == unix.EAGAIN:
			return nil
		case err == unix.ECONNABORTED || err == unix.EINTR:
			continue
		case err != nil:
			return fmt.Errorf("accept4: %w (raise the open-file limit, ulimit -n, for this many connections)", err)
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		if unix.EpollCtl(s.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}) != nil {
			unix.Close(fd)
			continue
		}
		s.conns[fd] = &conn{fd: fd}
	}
}

// readConn reads what c's client sent and answers every whole request.
func (s *server) readConn(c *conn, buf []byte) {
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(c.fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	if e == unix.EAGAIN {
		return
	}
	if e != 0 || n == 0 {
		s.drop(c)
		return
	}
	c.in = append(c.in, buf[:n]...)
	s.serveIn(c)
}

// serveIn answers the whole requests in c.in, one stream at a time.
func (s *server) serveIn(c *conn) {
	for c.total == 0 && !c.close {
		req, size, err := parseRequest(c.in)
		if err != nil {
			c.out = append(c.out, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"...)
			c.close = true
			break
		}
		if size == 0 {
			break // not whole yet
		}
		c.in = c.in[:copy(c.in, c.in[size:])]
		s.answer(c, req)
	}
	if len(c.out) > 0 {
		s.writeNow(c)
	}
}

// request is what floorsim reads of a request.
type request struct {
	method, path string
	maxTokens    int // 0: not set
	usage        bool
	prompt       int // bytes of the body, as a stand-in prompt length
}

var (
	headerEnd     = []byte("\r\n\r\n")
	contentLength = []byte("content-length")
	maxTokensKey  = []byte(`"max_tokens":`)
	usageKey      = []byte(`"include_usage":true`)
)

// parseRequest parses the first request in b: its size (0 while it is not
// whole), or an error for what floorsim cannot read (no request line, a
// bad or huge Content-Length, a header section over 64 KiB).
func parseRequest(b []byte) (request, int, error) {
	var r request
	end := bytes.Index(b, headerEnd)
	if end < 0 {
		if len(b) > 64<<10 {
			return r, 0, errors.New("header section too long")
		}
		return r, 0, nil
	}
	head := b[:end+2]
	line, _, _ := bytes.Cut(head, []byte("\r\n"))
	method, rest, ok := bytes.Cut(line, []byte(" "))
	path, _, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok || !ok2 || len(method) == 0 || len(path) == 0 {
		return r, 0, errors.New("no request line")
	}
	r.method, r.path = string(method), string(path)
	body := 0
	for rest := head[len(line)+2:]; len(rest) > 0; {
		var h []byte
		h, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, v, ok := bytes.Cut(h, []byte(":"))
		if !ok || !bytes.EqualFold(bytes.TrimSpace(name), contentLength) {
			continue
		}
		n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
		if err != nil || n < 0 || n > 1<<20 {
			return r, 0, errors.New("bad Content-Length")
		}
		body = n
	}
	size := end + len(headerEnd) + body
	if len(b) < size {
		return r, 0, nil
	}
	bb := b[end+len(headerEnd) : size]
	r.prompt = len(bb)
	if i := bytes.Index(bb, maxTokensKey); i >= 0 {
		j := i + len(maxTokensKey)
		k := j
		for k < len(bb) && bb[k] >= '0' && bb[k] <= '9' {
			k++
		}
		if n, err := strconv.Atoi(string(bb[j:k])); err == nil && n > 0 {
			r.maxTokens = min(n, 1<<20)
		}
	}
	r.usage = bytes.Contains(bb, usageKey)
	return r, size, nil
}

// answer starts the answer to req on c.
func (s *server) answer(c *conn, req request) {
	switch {
	case req.method == "GET" && req.path == "/health":
		c.out = append(c.out, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"...)
		return
	case req.method != "POST" || req.path != "/v1/chat/completions":
		c.out = append(c.out, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"...)
		c.close = true
		return
	}
	arrival := s.now()
	s.requests++
	no := s.requests
	c.total = req.maxTokens
	if c.total == 0 {
		c.total = s.tokens
	}
	c.next = 0
	c.usage = req.usage
	c.prompt = req.prompt/4 + 1
	c.first = arrival + s.ttft
	c.id = c.id[:0]
	c.id = append(c.id, `data: {"id":"chatcmpl-`...)
	c.id = fmt.Appendf(c.id, "%032x", no) // as long as spate sim's ids
	c.id = append(c.id, `","object":"chat.completion.chunk","created":`...)
	c.id = strconv.AppendInt(c.id, time.Now().Unix(), 10)
	c.id = append(c.id, `,"model":"floorsim",`...)

	c.out = append(c.out, "HTTP/1.1 200 OK\r\nCache-Control: no-cache\r\nContent-Type: text/event-stream; charset=utf-8\r\nX-Accel-Buffering: no\r\nX-Request-Id: chatcmpl-"...)
	c.out = fmt.Appendf(c.out, "%032x", no)
	c.out = append(c.out, "\r\nDate: "...)
	c.out = time.Now().UTC().AppendFormat(c.out, "Mon, 02 Jan 2006 15:04:05 GMT")
	c.out = append(c.out, "\r\nTransfer-Encoding: chunked\r\n\r\n"...)
	ev := len(c.out)
	c.out = append(c.out, c.id...)
	c.out = append(c.out, `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
	c.out = frameChunk(c.out, ev)
	s.queue(c)
}

// frameChunk frames b[from:] as one chunk of the chunked coding in place.
func frameChunk(b []byte, from int) []byte {
	n := len(b) - from
	var size [16]byte
	hdr := strconv.AppendUint(size[:0], uint64(n), 16)
	hdr = append(hdr, "\r\n"...)
	b = append(b, hdr...) // room
	copy(b[from+len(hdr):], b[from:from+n])
	copy(b[from:], hdr)
	return append(b, "\r\n"...)
}

// dueOf is the exact time of c's next token, since the epoch.
func (s *server) dueOf(c *conn) time.Duration { return c.first + time.Duration(c.next)*s.itl }

// queue puts c's stream in the slot of its next token.
func (s *server) queue(c *conn) {
	k := s.tickOf(s.dueOf(c))
	k = max(k, s.done+1)
	c.dueTick = k
	i := int(k % int64(len(s.wheel)))
	s.wheel[i] = append(s.wheel[i], c)
	s.pending++
}

// pass sends every token due by now, one batch.
func (s *server) pass() {
	last := int64(s.now() / s.tick) // the last tick due
	for k := s.done + 1; k <= last; k++ {
		i := int(k % int64(len(s.wheel)))
		slot := s.wheel[i]
		keep := slot[:0]
		for _, c := range slot {
			if c.dueTick > k { // a later round's (the loop fell behind)
				keep = append(keep, c)
				continue
			}
			s.pending--
			if c.total == 0 { // dropped meanwhile
				continue
			}
			// Every token due by tick k (more than one when the ITL is
			// shorter than the tick), then the next in its slot: always a
			// later tick, never this slot (a slot is more ticks ahead than
			// a stream waits).
			s.token(c)
			for c.total > 0 && s.tickOf(s.dueOf(c)) <= k {
				s.token(c)
			}
			if c.total > 0 {
				s.queue(c)
			}
			if !c.dirty {
				c.dirty = true
				s.batch = append(s.batch, c)
			}
		}
		clear(slot[len(keep):])
		s.wheel[i] = keep
		s.done = k
	}
	if len(s.batch) == 0 {
		s.emptyTicks++
	}
	s.flush()
	// Requests that came while their connection's stream was on.
	for i, c := range s.ended {
		if s.conns[c.fd] == c && len(c.in) > 0 {
			s.serveIn(c)
		}
		s.ended[i] = nil
	}
	s.ended = s.ended[:0]
}

// token frames c's next token, or the last with the body's end.
func (s *server) token(c *conn) {
	ev := len(c.out)
	c.out = append(c.out, c.id...)
	c.out = append(c.out, `"choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":`...)
	c.next++
	if c.next < c.total {
		c.out = append(c.out, "null}]}\n\n"...)
		c.out = frameChunk(c.out, ev)
		return
	}
	c.out = append(c.out, `"length","stop_reason":null}]}`+"\n\n"...)
	if c.usage {
		c.out = append(c.out, c.id...)
		c.out = append(c.out, `"choices":[],"usage":{"prompt_tokens":`...)
		c.out = strconv.AppendInt(c.out, int64(c.prompt), 10)
		c.out = append(c.out, `,"total_tokens":`...)
		c.out = strconv.AppendInt(c.out, int64(c.prompt+c.total), 10)
		c.out = append(c.out, `,"completion_tokens":`...)
		c.out = strconv.AppendInt(c.out, int64(c.total), 10)
		c.out = append(c.out, "}}\n\n"...)
	}
	c.out = append(c.out, "data: [DONE]\n\n"...)
	c.out = frameChunk(c.out, ev)
	c.out = append(c.out, "0\r\n\r\n"...)
	c.total = 0
	s.ended = append(s.ended, c)
}

// flush writes the batch: one io_uring submission, or write(2) each.
func (s *server) flush() {
	if len(s.batch) == 0 {
		return
	}
	if s.ring != nil && len(s.batch) <= int(s.ring.Entries()) {
		for i, c := range s.batch {
			s.ring.Push(iouring.SQE{
				Opcode:   iouring.OpSend,
				Fd:       int32(c.fd),
				Addr:     uint64(uintptr(unsafe.Pointer(&c.out[0]))),
				Len:      uint32(len(c.out)),
				OpFlags:  unix.MSG_DONTWAIT | unix.MSG_NOSIGNAL,
				UserData: uint64(i),
			})
		}
		want := len(s.batch)
		if _, err := s.ring.Submit(); err == nil {
			got := 0
			for got < want {
				got += s.ring.Reap(func(e *iouring.CQE) { s.sent(s.batch[e.UserData], int(e.Res)) })
				if got < want {
					_ = s.ring.Wait(1, 0) // not expected: MSG_DONTWAIT sends complete inline
				}
			}
			s.endBatch()
			return
		}
		s.ring.SetSQTail(s.ring.SQHead()) // withdraw; write each below
	}
	for _, c := range s.batch {
		s.writeNow(c)
	}
	s.endBatch()
}

// endBatch empties the batch.
func (s *server) endBatch() {
	for i, c := range s.batch {
		c.dirty = false
		s.batch[i] = nil
	}
	s.batch = s.batch[:0]
}

// writeNow writes c.out with write(2).
func (s *server) writeNow(c *conn) {
	if len(c.out) == 0 {
		return
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(c.fd), uintptr(unsafe.Pointer(&c.out[0])), uintptr(len(c.out)))
	res := int(n)
	if e != 0 {
		res = -int(e)
	}
	s.sent(c, res)
}

// sent takes the result of writing c.out: bytes taken, or -errno. Bytes a
// full socket did not take are written when it has room (EPOLLOUT; a
// client that reads as fast as loopback delivers never fills one, and
// waits counts the times one did).
func (s *server) sent(c *conn, res int) {
	switch {
	case res == -int(unix.EAGAIN):
	case res < 0:
		s.drop(c)
		return
	default:
		c.out = c.out[:copy(c.out, c.out[res:])]
		if len(c.out) == 0 && c.close {
			s.drop(c)
			return
		}
	}
	if want := len(c.out) > 0; want != c.waitOut {
		ev := uint32(unix.EPOLLIN)
		if want {
			ev |= unix.EPOLLOUT
			s.waits++
		}
		if unix.EpollCtl(s.ep, unix.EPOLL_CTL_MOD, c.fd, &unix.EpollEvent{Events: ev, Fd: int32(c.fd)}) != nil {
			s.drop(c)
			return
		}
		c.waitOut = want
	}
}

// drop closes c; a stream of it still in the wheel is skipped.
func (s *server) drop(c *conn) {
	if _, ok := s.conns[c.fd]; !ok {
		return
	}
	delete(s.conns, c.fd)
	c.total = 0
	unix.Close(c.fd)
}

// arm sets the timerfd for the next tick with a token due, if it moved.
func (s *server) arm() {
	k := int64(-1)
	if s.pending > 0 {
		// The first tick with a stream due at it. A slot may also hold
		// streams of a later round (queued while the loop lagged behind
		// its ticks); the earliest of those if no slot has one due.
		later := int64(-1)
	scan:
		for d := int64(1); d <= int64(len(s.wheel)); d++ {
			for _, c := range s.wheel[int((s.done+d)%int64(len(s.wheel)))] {
				if c.dueTick == s.done+d {
					k = s.done + d
					break scan
				}
				if later < 0 || c.dueTick < later {
					later = c.dueTick
				}
			}
		}
		if k < 0 {
			k = later
		}
	}
	if k == s.armed {
		return
	}
	s.armed = k
	var spec unix.ItimerSpec // zero: disarmed
	if k >= 0 {
		spec.Value = unix.NsecToTimespec(s.mono0 + int64(s.due(k)))
	}
	_, _, _ = unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(s.tfd), unix.TFD_TIMER_ABSTIME, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
}
