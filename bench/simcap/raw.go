//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The raw client (-client raw): a lean HTTP/1.1 streaming client on epoll,
// so that the client is not what limits a run at 10,000 streams. Each loop
// goroutine owns an epoll instance and a share of the connections; it reads
// each ready socket once per readiness (64 KiB at a time), timestamps the
// read, and parses the chunked body and its server-sent events in place.
// Requests go back to back on keep-alive connections, as with the net/http
// client.

// Parser states of one response.
const (
	stHeaders = iota
	stSize
	stData
	stDataCRLF
	stTrailer
)

type rawConn struct {
	fd       int
	worker   int
	buf      []byte // bytes read and not parsed yet
	line     []byte // an event line split across chunks or reads
	state    int
	left     int // bytes left in the current chunk
	sent     time.Time
	last     time.Time
	n        int // content events
	done     bool
	measured bool
	status   int
}

// rawLoop is one epoll loop and its connections.
type rawLoop struct {
	ep    int
	conns map[int]*rawConn
	evs   []unix.EpollEvent
	rbuf  []byte
	oob   [64]byte
}

// levelPlan is what the raw and uring clients share for one level: the
// server's address, the request, and when the level starts, measures,
// stops sending and gives up.
type levelPlan struct {
	sa                               unix.SockaddrInet4
	req                              []byte
	streamLen                        time.Duration
	start, measureFrom, end, hardEnd time.Time
}

// newLevelPlan plans a level of streams of tokens tokens (TTFT ttft, ITL
// itl) measured for duration after one stream length and a second.
func newLevelPlan(addr string, ttft, itl time.Duration, tokens int, duration time.Duration) (*levelPlan, error) {
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &levelPlan{}
	copy(p.sa.Addr[:], ta.IP.To4())
	p.sa.Port = ta.Port
	body := fmt.Sprintf(`{"model":"simcap","messages":[{"role":"user","content":"Tell me a story."}],"max_tokens":%d,"stream":true,"stream_options":{"include_usage":true}}`, tokens)
	p.req = []byte(fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body))
	p.streamLen = ttft + time.Duration(tokens-1)*itl
	p.start = time.Now()
	p.measureFrom = p.start.Add(p.streamLen + time.Second)
	p.end = p.measureFrom.Add(duration)
	p.hardEnd = p.end.Add(p.streamLen + 5*time.Second)
	return p, nil
}

// runRaw drives one level with the raw client: c workers over loops epoll
// loops, started at staggered offsets within one stream length.
func runRaw(ctx context.Context, addr string, pid, c int, ttft, itl time.Duration, tokens int, duration time.Duration, loops int) *level {
	l := &level{conc: c, ttft: newHist(), itl: newHist()}
	lp0, err := newLevelPlan(addr, ttft, itl, tokens, duration)
	if err != nil {
		l.firstErr.Store(err.Error())
		return l
	}
	sa, req, streamLen, start, measureFrom, end, hardEnd := lp0.sa, lp0.req, lp0.streamLen, lp0.start, lp0.measureFrom, lp0.end, lp0.hardEnd

	simCPU0 := procCPU(pid)
	own0 := selfCPU()
	loops = max(1, min(loops, c))
	var wg sync.WaitGroup
	for k := range loops {
		wg.Go(func() {
			lp := &rawLoop{conns: make(map[int]*rawConn), evs: make([]unix.EpollEvent, 1024), rbuf: make([]byte, 64<<10)}
			var err error
			if lp.ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
				l.firstErr.CompareAndSwap(nil, err.Error())
				return
			}
			defer unix.Close(lp.ep)
			var mine []int
			for w := k; w < c; w += loops {
				mine = append(mine, w)
			}
			lp.run(ctx, l, &sa, req, mine, c, tokens, streamLen, start, measureFrom, end, hardEnd)
		})
	}
	wg.Wait()
	l.wall = time.Since(start)
	l.simCPU = procCPU(pid).sub(simCPU0)
	l.ownCPU = selfCPU().sub(own0)
	return l
}

func (lp *rawLoop) run(ctx context.Context, l *level, sa *unix.SockaddrInet4, req []byte, workers []int, c, tokens int, streamLen time.Duration, start, measureFrom, end, hardEnd time.Time) {
	next := 0 // workers[next] is the next to start
	offset := func(w int) time.Time { return start.Add(time.Duration(int64(streamLen) * int64(w) / int64(c))) }
	fail := func(msg string) {
		atomic.AddInt64(&l.failed, 1)
		l.firstErr.CompareAndSwap(nil, msg)
	}
	send := func(rc *rawConn, now time.Time) bool {
		*rc = rawConn{fd: rc.fd, worker: rc.worker, buf: rc.buf[:0], line: rc.line[:0], measured: !now.Before(measureFrom)}
		for off := 0; off < len(req); {
			n, err := unix.Write(rc.fd, req[off:])
			if err != nil {
				fail("write: " + err.Error())
				return false
			}
			off += n
		}
		rc.sent = time.Now()
		return true
	}
	open := func(w int, now time.Time) {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			fail("socket: " + err.Error())
			return
		}
		if err := unix.Connect(fd, sa); err != nil {
			unix.Close(fd)
			fail("connect: " + err.Error())
			return
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		if rawStamps {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		}
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
			return
		}
		if err := unix.EpollCtl(lp.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}); err != nil {
			unix.Close(fd)
			fail("epoll_ctl: " + err.Error())
			return
		}
		rc := &rawConn{fd: fd, worker: w, buf: make([]byte, 0, 4096)}
		lp.conns[fd] = rc
		if !send(rc, now) {
			lp.drop(rc)
		}
	}
	for {
		now := time.Now()
		if ctx.Err() != nil || now.After(hardEnd) {
			break
		}
		for next < len(workers) && !offset(workers[next]).After(now) {
			if now.Before(end) {
				open(workers[next], now)
			}
			next++
		}
		if next == len(workers) && len(lp.conns) == 0 {
			break
		}
		timeout := 50
		if next < len(workers) {
			timeout = int(min(time.Until(offset(workers[next])), 50*time.Millisecond)/time.Millisecond) + 1
		}
		k, err := unix.EpollWait(lp.ep, lp.evs, timeout)
		if err != nil && err != unix.EINTR {
			fail("epoll_wait: " + err.Error())
			break
		}
		for _, ev := range lp.evs[:max(k, 0)] {
			rc := lp.conns[int(ev.Fd)]
			if rc == nil {
				continue
			}
			n, t, err := lp.read(rc.fd)
			if err == unix.EAGAIN {
				continue
			}
			if n <= 0 {
				if !now.After(end) || rc.n > 0 {
					fail(fmt.Sprintf("connection closed after %d content events", rc.n))
				}
				lp.drop(rc)
				continue
			}
			complete, perr := rc.parse(lp.rbuf[:n], t, l)
			if perr != "" {
				fail(perr)
				lp.drop(rc)
				continue
			}
			if !complete {
				continue
			}
			switch {
			case !rc.done:
				fail("stream ended without [DONE]")
			case rc.n != tokens:
				atomic.AddInt64(&l.short, 1)
				l.firstErr.CompareAndSwap(nil, fmt.Sprintf("stream had %d content events, want %d", rc.n, tokens))
			}
			atomic.AddInt64(&l.completed, 1)
			if t.Before(end) {
				if !send(rc, t) {
					lp.drop(rc)
				}
			} else {
				lp.drop(rc)
			}
		}
	}
	for _, rc := range lp.conns {
		lp.drop(rc)
	}
}

// rawStamps makes the raw client read with recvmsg(2) and time each read
// by the kernel's receive time (SO_TIMESTAMPNS), as spate's reactor does.
var rawStamps bool

// read reads fd once and times the read: when it returned, or with
// rawStamps when its bytes arrived.
func (lp *rawLoop) read(fd int) (int, time.Time, error) {
	if !rawStamps {
		n, err := unix.Read(fd, lp.rbuf)
		return n, time.Now(), err
	}
	n, oobn, _, _, err := unix.Recvmsg(fd, lp.rbuf, lp.oob[:], 0)
	t := time.Now()
	if msgs, perr := unix.ParseSocketControlMessage(lp.oob[:oobn]); perr == nil {
		for _, m := range msgs {
			if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16 {
				ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
				if w := t.UnixNano() - ts.Nano(); w >= 0 && w < int64(10*time.Second) {
					t = t.Add(-time.Duration(w))
				}
			}
		}
	}
	return n, t, err
}

func (lp *rawLoop) drop(rc *rawConn) {
	_ = unix.EpollCtl(lp.ep, unix.EPOLL_CTL_DEL, rc.fd, nil)
	unix.Close(rc.fd)
	delete(lp.conns, rc.fd)
}

var (
	headerEnd = []byte("\r\n\r\n")
	crlf      = []byte("\r\n")
)

// parse consumes bytes read at t and reports whether the response is
// complete, or a parse error.
func (rc *rawConn) parse(in []byte, t time.Time, l *level) (bool, string) {
	b := in
	if len(rc.buf) > 0 {
		rc.buf = append(rc.buf, in...)
		b = rc.buf
	}
	for {
		switch rc.state {
		case stHeaders:
			i := bytes.Index(b, headerEnd)
			if i < 0 {
				return rc.keep(b), ""
			}
			if len(b) < 12 || !bytes.HasPrefix(b, []byte("HTTP/1.1 ")) {
				return false, "bad status line"
			}
			rc.status, _ = strconv.Atoi(string(b[9:12]))
			if rc.status != 200 {
				return false, "status " + string(b[9:12])
			}
			b = b[i+4:]
			rc.state = stSize
		case stSize:
			i := bytes.Index(b, crlf)
			if i < 0 {
				return rc.keep(b), ""
			}
			size, err := strconv.ParseUint(string(b[:i]), 16, 32)
			if err != nil {
				return false, "bad chunk size " + strconv.Quote(string(b[:i]))
			}
			b = b[i+2:]
			if size == 0 {
				rc.state = stTrailer
			} else {
				rc.left, rc.state = int(size), stData
			}
		case stData:
			k := min(rc.left, len(b))
			rc.events(b[:k], t, l)
			rc.left -= k
			b = b[k:]
			if rc.left > 0 {
				return rc.keep(b), ""
			}
			rc.state = stDataCRLF
		case stDataCRLF, stTrailer:
			if len(b) < 2 {
				return rc.keep(b), ""
			}
			if b[0] != '\r' || b[1] != '\n' {
				return false, "bad chunk end"
			}
			b = b[2:]
			if rc.state == stTrailer {
				rc.buf = rc.buf[:0]
				return true, ""
			}
			rc.state = stSize
		}
	}
}

// keep saves unparsed bytes for the next read.
func (rc *rawConn) keep(b []byte) bool {
	rc.buf = append(rc.buf[:0], b...)
	return false
}

var (
	dataPrefix   = []byte("data: ")
	doneEvent    = []byte("data: [DONE]")
	contentField = []byte(`"delta":{"content":"`)
)

// events splits body bytes into lines and records the content events, each
// stamped with the time of the read that completed it.
func (rc *rawConn) events(b []byte, t time.Time, l *level) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			rc.line = append(rc.line, b...)
			return
		}
		line := b[:i]
		if len(rc.line) > 0 {
			rc.line = append(rc.line, line...)
			line = rc.line
		}
		b = b[i+1:]
		rc.event(line, t, l)
		rc.line = rc.line[:0]
	}
}

func (rc *rawConn) event(line []byte, t time.Time, l *level) {
	if !bytes.HasPrefix(line, dataPrefix) {
		return
	}
	if bytes.HasPrefix(line, doneEvent) {
		rc.done = true
		return
	}
	i := bytes.Index(line, contentField)
	if i < 0 || i+len(contentField) >= len(line) || line[i+len(contentField)] == '"' {
		return // role-only, empty or usage event
	}
	if rc.measured {
		if rc.n == 0 {
			l.ttft.add(t.Sub(rc.sent))
		} else {
			gap := t.Sub(rc.last)
			l.itl.add(gap)
			atomic.AddInt64(&l.events, 1)
			if gap < 50*time.Microsecond {
				atomic.AddInt64(&l.batched, 1)
			}
		}
	}
	rc.last = t
	rc.n++
}
