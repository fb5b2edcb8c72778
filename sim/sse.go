package sim

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// writeStallLimit bounds how long one write may block on a client that
// stopped reading (its socket buffers full): the write then fails and the
// stream ends. Loopback socket buffers hold thousands of events, so only a
// stuck client ever meets it.
const writeStallLimit = time.Second

// sseState is where a streamed response is.
type sseState int

const (
	sseOpen      sseState = iota
	sseDone               // every event written, [DONE] included
	sseTruncated          // cut by the truncation fault; the handler aborts the connection
	sseFailed             // a write failed (client gone, or stuck past writeStallLimit)
	sseAbandoned          // the handler left (client or server gone); nothing more is written
)

// sseStream writes one streamed response. In deterministic mode the pacer
// writes it from its own goroutine, so a token costs no goroutine switch:
// either straight to the socket (fd >= 0), framing the events into pend and
// leaving the write to the pass's batch, or through the ResponseWriter with
// emit. In engine mode the handler goroutine calls emit when woken. For
// ResponseWriter streams mu is held around every emit; the handler takes it
// to abandon the stream, after which the ResponseWriter is never touched
// again. A direct stream belongs to the pacer from submission until the
// pacer finishes its stream (handBack); only the pacer touches its fields
// meanwhile.
type sseStream struct {
	mu         sync.Mutex
	s          *Server
	g          *generation
	w          http.ResponseWriter
	flush      func() error
	rc         *http.ResponseController
	c          *chunker
	buf        []byte
	written    int
	first      time.Time // first content write
	last       time.Time // latest write
	deadline   time.Time // write deadline in force
	noDeadline bool      // the writer does not support deadlines
	state      sseState

	// Direct writes (see pacer).
	fd           int       // the socket's handle from the pacer's sender, or -1
	pend         []byte    // framed bytes the socket has not taken yet
	counted      int       // tokens counted in the metrics (their bytes left)
	blockedSince time.Time // when the socket was first found full, or zero
	midFrame     bool      // the socket took part of a frame: the body is broken if the stream stops now
	dirty        bool      // in the pacer's list of streams to write
	released     bool      // handed back to the handler
}

func newSSEStream(s *Server, g *generation, w http.ResponseWriter) *sseStream {
	x := &sseStream{s: s, g: g, w: w, c: newChunker(g), buf: make([]byte, 0, 1024), rc: http.NewResponseController(w), fd: -1}
	switch f := w.(type) {
	case interface{ FlushError() error }:
		x.flush = f.FlushError
	case http.Flusher:
		x.flush = func() error { f.Flush(); return nil }
	default:
		x.flush = func() error { return nil }
	}
	return x
}

// writeRole writes the headers and, for chat, the role-only first event.
// It is called before the stream is handed to a clock.
func (x *sseStream) writeRole() bool {
	h := x.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-Request-Id", x.g.id)
	x.w.WriteHeader(http.StatusOK)
	if x.g.ep == epChat {
		x.buf = x.c.appendRole(x.buf[:0])
		if _, err := x.w.Write(x.buf); err != nil {
			x.state = sseFailed
			return false
		}
	}
	if err := x.flush(); err != nil {
		x.state = sseFailed
		return false
	}
	return true
}

// appendEvents appends to b the content events from token x.written up to
// token upto (exclusive), each its own event, followed by the usage event and
// [DONE] once the last token is out; it stops at the truncation point. It
// advances x.written and x.state.
func (x *sseStream) appendEvents(b []byte, upto int) []byte {
	g := x.g
	upto = min(upto, g.n)
	for x.written < upto {
		if x.written == g.truncate {
			x.state = sseTruncated
			break
		}
		b = x.c.appendToken(b, g.eventWord(x.s.vocab, x.written), x.written == g.n-1)
		x.written++
	}
	if x.written == g.n && x.state == sseOpen {
		if g.includeUsage {
			b = x.c.appendUsage(b, g.prompt, g.n)
		}
		b = append(b, "data: [DONE]\n\n"...)
		x.state = sseDone
	}
	return b
}

// emit writes the content events up to token upto (exclusive) through the
// ResponseWriter in one write and flush (see appendEvents). The caller holds
// x.mu. It reports whether the stream is over.
func (x *sseStream) emit(upto int) bool {
	if x.state != sseOpen {
		return true
	}
	from := x.written
	b := x.appendEvents(x.buf[:0], upto)
	x.buf = b
	if len(b) == 0 {
		return x.state != sseOpen
	}
	x.armDeadline()
	if _, err := x.w.Write(b); err != nil {
		x.state = sseFailed
		return true
	}
	if err := x.flush(); err != nil {
		x.state = sseFailed
		return true
	}
	x.count(from, x.written, time.Now())
	return x.state != sseOpen
}

// frame appends the events up to token upto (see appendEvents) to x.pend
// as one chunk of HTTP/1.1's chunked coding, byte for byte what net/http
// sends for one Write and Flush of the same events: the length in lower-case
// hex, CRLF, the events, CRLF. The pacer writes x.pend to the socket.
func (x *sseStream) frame(upto int) {
	if x.state != sseOpen {
		return
	}
	ev := x.appendEvents(x.buf[:0], upto)
	x.buf = ev
	if len(ev) == 0 {
		return
	}
	x.pend = strconv.AppendUint(x.pend, uint64(len(ev)), 16)
	x.pend = append(x.pend, "\r\n"...)
	x.pend = append(x.pend, ev...)
	x.pend = append(x.pend, "\r\n"...)
}

// settle takes the outcome of writing x.pend (bytes taken, resWouldBlock or
// -errno) at wall time and reports whether bytes remain for a later pass.
// Tokens whose bytes all left are counted; a socket full for longer than
// writeStallLimit, or a failed write, fails the stream.
func (x *sseStream) settle(res int32, wall time.Time) (pending bool) {
	switch {
	case res >= 0:
		n := int(res)
		if n >= len(x.pend) {
			x.pend = x.pend[:0]
		} else if n > 0 {
			x.pend = x.pend[:copy(x.pend, x.pend[n:])]
			x.midFrame = true
		}
	case res == resWouldBlock:
	default:
		x.state = sseFailed
		x.pend = x.pend[:0]
		return false
	}
	if len(x.pend) == 0 {
		x.midFrame = false
		x.blockedSince = time.Time{}
		x.count(x.counted, x.written, wall)
		x.counted = x.written
		return false
	}
	if x.blockedSince.IsZero() {
		x.blockedSince = wall
	} else if wall.Sub(x.blockedSince) > writeStallLimit {
		x.state = sseFailed
		return false
	}
	return true
}

// armDeadline keeps a write deadline of about writeStallLimit ahead, renewing
// it every half limit (not every write: setting one costs a timer update).
func (x *sseStream) armDeadline() {
	if x.noDeadline {
		return
	}
	now := time.Now()
	if now.Add(writeStallLimit / 2).Before(x.deadline) {
		return
	}
	x.deadline = now.Add(writeStallLimit)
	if err := x.rc.SetWriteDeadline(x.deadline); err != nil {
		x.noDeadline = true
	}
}

// clearDeadline removes the write deadline so that the connection can serve
// its next request.
func (x *sseStream) clearDeadline() {
	if !x.noDeadline && !x.deadline.IsZero() {
		_ = x.rc.SetWriteDeadline(time.Time{})
	}
}

// abandon stops the stream for good: no more writes to the ResponseWriter.
func (x *sseStream) abandon() {
	x.mu.Lock()
	if x.state == sseOpen {
		x.state = sseAbandoned
	}
	x.mu.Unlock()
}

// count records the metrics of tokens [from, to) written at now.
func (x *sseStream) count(from, to int, now time.Time) {
	if to <= from {
		return
	}
	m := x.s.metrics
	if from == 0 {
		m.ttft.Observe(now.Sub(x.g.arrival).Seconds())
		x.first = now
	} else {
		m.itl.Observe(now.Sub(x.last).Seconds())
	}
	for k := to - from - 1; k > 0; k-- {
		m.itl.Observe(0) // tokens that left in the same write
	}
	m.genTokens.Add(float64(to - from))
	x.last = now
}

// streamGeneration writes g as server-sent events, one event per token,
// each written and flushed as soon as the clock releases it.
func (s *Server) streamGeneration(w http.ResponseWriter, r *http.Request, g *generation) {
	ctx := r.Context()
	x := newSSEStream(s, g, w)
	if !x.writeRole() {
		s.metrics.success.WithLabelValues("abort").Inc()
		return
	}
	st := g.st
	defer s.watch(ctx, st)()
	direct := false
	if p := s.pacerFor(g.seqNo); p != nil {
		if p.snd != nil {
			x.fd = directSocket(r, w, p.snd.hold)
			direct = x.fd >= 0
		}
		e, ok := s.start(g, x, false)
		switch {
		case direct && !ok: // the server is closing
			p.snd.release(x.fd)
			x.state = sseAbandoned
		case direct:
			// The pacer owns the stream until it finishes it; a client or
			// server that goes away only asks for it back.
			asked := false
			for !st.done.Load() {
				<-st.wake
				if !asked && st.cancelled.Load() {
					p.cancel(e)
					asked = true
				}
			}
		default:
			for !st.done.Load() {
				if !s.await(st) {
					x.abandon()
					break
				}
			}
		}
	} else {
		s.start(g, nil, false)
		stallPending := g.stallAt >= 0
		for {
			if !s.await(st) {
				x.abandon()
				break
			}
			rel := int(st.released.Load())
			x.mu.Lock()
			if stallPending && rel > g.stallAt {
				// Engine mode stall: the tokens made meanwhile leave in a
				// burst after it.
				stallPending = false
				over := x.emit(g.stallAt)
				x.mu.Unlock()
				if over {
					break
				}
				if !s.sleepCtx(ctx, g.stall) {
					x.abandon()
					break
				}
				x.mu.Lock()
				rel = int(st.released.Load())
			}
			over := x.emit(rel)
			x.mu.Unlock()
			if over {
				break
			}
		}
	}

	x.mu.Lock()
	state := x.state
	x.mu.Unlock()
	m := s.metrics
	switch state {
	case sseDone:
		x.clearDeadline()
		m.e2e.Observe(x.last.Sub(g.arrival).Seconds())
		m.success.WithLabelValues(g.finish).Inc()
		if s.driver != nil {
			m.queue.Observe(time.Duration(st.queueTime.Load()).Seconds())
		}
		if g.n >= 2 {
			m.tpot.Observe(x.last.Sub(x.first).Seconds() / float64(g.n-1))
		}
	case sseTruncated:
		st.cancelled.Store(true)
		m.success.WithLabelValues("abort").Inc()
		panic(http.ErrAbortHandler) // closes the connection without ending the chunked body
	default:
		st.cancelled.Store(true)
		m.success.WithLabelValues("abort").Inc()
		if direct && (state == sseFailed || x.midFrame) {
			// The socket is stuck or holds part of a chunk: net/http must
			// not write the end of the body on it.
			panic(http.ErrAbortHandler)
		}
	}
}
