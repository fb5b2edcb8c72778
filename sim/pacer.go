package sim

import (
	"context"
	"sync"
	"time"
)

// pacer is the deterministic mode's clock: one goroutine that keeps every
// in-flight request in a min-heap on the due time of its next token and, each
// time it wakes, releases the tokens of all requests due by then. Token k of
// a request is due at start + TTFT + k·ITL (plus a stall, if one was drawn),
// an absolute time rounded up to the tick grid (multiples of tick since the
// epoch), so lateness never accumulates and every token due in one tick
// leaves in the same pass.
//
// Streams whose socket it can reach (sseStream.fd >= 0) it writes itself: a
// pass frames each due token into its stream's pending bytes and hands all of
// them to the sender at once (one io_uring submission, or a send(2) per
// stream). Those streams belong to the pacer until it hands them back
// (stream.finish): their handler never touches the connection meanwhile, and
// asks for them back with cancel. Other streams it writes through their
// ResponseWriter under the stream's lock, as the handler may abandon them.
type pacer struct {
	ttft, itl, tick time.Duration
	epoch           time.Time
	alarm           alarm
	snd             sender // nil: no direct socket writes

	mu          sync.Mutex
	inbox       []*paced
	spare       []*paced
	cancels     []*paced
	cancelSpare []*paced
	closed      bool

	// armMu orders the alarm's settings: armed is when it goes off next,
	// awake while a pass runs (the pass looks at the inbox before sleeping);
	// stopped once the alarm is closed.
	armMu   sync.Mutex
	armed   time.Duration
	stopped bool

	heap  []*paced
	later []*paced     // due, but their stream has maxPend bytes waiting
	dirty []*sseStream // direct streams with bytes to write in this pass
	ops   []sendOp
}

// maxPend bounds the bytes a direct stream frames ahead of its socket: a
// stream whose tokens are all due at once (ITL 0), or whose client reads
// slowly, is framed maxPend at a time, pass after pass.
const maxPend = 64 << 10

// awake is the armed value while the clock runs a pass.
const awake = time.Duration(-1 << 63)

// paced is one request on the pacer.
type paced struct {
	st      *stream
	out     *sseStream    // streamed response the pacer writes itself, or nil
	start   time.Duration // since epoch: arrival plus any latency spike
	total   int           // content tokens
	next    int           // tokens released so far
	stallAt int           // token index before which the stream stalls, or -1
	stall   time.Duration
	whole   bool          // release everything at once when the last token is due
	fixed   time.Duration // if whole and total == 0 (embeddings): the delay from start
	due     time.Duration // of the next release, on the grid
	dead    bool          // handed back on its handler's request; skip it
}

// direct reports whether the pacer writes e's socket itself.
func (e *paced) direct() bool { return e.out != nil && e.out.fd >= 0 }

func newPacer(ttft, itl, tick time.Duration, snd sender, portableAlarm, held bool) *pacer {
	epoch := time.Now()
	return &pacer{ttft: ttft, itl: itl, tick: tick, epoch: epoch, snd: snd, alarm: newAlarm(epoch, portableAlarm, held), armed: never}
}

// since converts a wall-clock instant to pacer time.
func (p *pacer) since(t time.Time) time.Duration { return t.Sub(p.epoch) }

// grid rounds d up to the tick grid.
func (p *pacer) grid(d time.Duration) time.Duration {
	if p.tick <= 1 || d <= 0 {
		return max(d, 0)
	}
	return (d + p.tick - 1) / p.tick * p.tick
}

// dueOf returns when token k of e is due, on the grid.
func (p *pacer) dueOf(e *paced, k int) time.Duration {
	d := e.start + p.ttft + time.Duration(k)*p.itl
	if e.stallAt >= 0 && k >= e.stallAt {
		d += e.stall
	}
	return p.grid(d)
}

// submit hands a request to the pacer; false if the pacer has stopped (the
// server is closing), in which case the caller keeps the request.
func (p *pacer) submit(e *paced) bool {
	switch {
	case e.whole && e.total == 0:
		e.due = p.grid(e.start + e.fixed)
	case e.whole:
		e.due = p.dueOf(e, e.total-1)
	default:
		e.due = p.dueOf(e, 0)
	}
	due := e.due // e belongs to the clock once in the inbox
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	p.inbox = append(p.inbox, e)
	p.mu.Unlock()
	p.wakeBy(due)
	return true
}

// cancel asks for a direct stream back: the pacer stops writing it,
// releases its socket and finishes its stream at its next pass (at once
// if it has stopped).
func (p *pacer) cancel(e *paced) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return // shutdown hands every stream back
	}
	p.cancels = append(p.cancels, e)
	p.mu.Unlock()
	p.wakeBy(0)
}

// wakeBy makes sure the clock wakes no later than t.
func (p *pacer) wakeBy(t time.Duration) {
	p.armMu.Lock()
	if t < p.armed && !p.stopped {
		p.armed = t
		p.alarm.set(t)
	}
	p.armMu.Unlock()
}

// rearm sets the alarm for the next pass: the next due token, the next tick
// while writes are pending, at once if requests came in meanwhile.
func (p *pacer) rearm(now time.Duration) {
	next := never
	if len(p.heap) > 0 {
		next = p.heap[0].due
	}
	// Bytes wait for a full socket, or tokens were held back for one (only
	// those are still due as of this pass): try again shortly.
	retry := p.grid(now + max(p.tick, pacerRetry))
	switch {
	case next <= now:
		next = retry
	case len(p.dirty) > 0:
		next = min(next, retry)
	}
	p.armMu.Lock()
	p.mu.Lock()
	if len(p.inbox) > 0 || len(p.cancels) > 0 {
		next = 0
	}
	p.mu.Unlock()
	p.armed = next
	p.alarm.set(next)
	p.armMu.Unlock()
}

// pacerRetry is the shortest wait before writing again to a socket that was
// full.
const pacerRetry = 100 * time.Microsecond

// run is the pacer's loop; it returns when ctx is done, having handed every
// direct stream back.
func (p *pacer) run(ctx context.Context) {
	if p.alarm.lockThread() {
		unlock := lockClockThread()
		defer unlock()
	}
	stop := context.AfterFunc(ctx, func() {
		p.armMu.Lock()
		if !p.stopped {
			p.alarm.set(0)
		}
		p.armMu.Unlock()
	})
	defer stop()
	defer p.shutdown()
	for {
		p.armMu.Lock()
		p.armed = awake
		p.armMu.Unlock()
		now := p.pass()
		p.rearm(now)
		if ctx.Err() != nil {
			return
		}
		p.alarm.wait(ctx)
		if ctx.Err() != nil {
			return
		}
	}
}

// pass takes in new requests and cancellations, releases every token due by
// now and writes the direct streams' bytes. It returns now.
func (p *pacer) pass() time.Duration {
	p.mu.Lock()
	in, cancels := p.inbox, p.cancels
	p.inbox, p.cancels = p.spare[:0], p.cancelSpare[:0]
	p.mu.Unlock()
	for i, e := range in {
		p.push(e)
		in[i] = nil
	}
	p.spare = in
	for i, e := range cancels {
		if !e.dead {
			e.dead = true
			p.handBack(e.out)
		}
		cancels[i] = nil
	}
	p.cancelSpare = cancels

	wall := time.Now()
	now := wall.Sub(p.epoch)
	for len(p.heap) > 0 && p.heap[0].due <= now {
		e := p.heap[0]
		switch {
		case e.dead:
			p.pop()
		case e.direct():
			x := e.out
			if x.released { // its write failed: nothing more to send
				p.pop()
				continue
			}
			if len(x.pend) >= maxPend {
				p.later = append(p.later, e)
				p.pop()
				continue
			}
			e.next++
			x.frame(e.next)
			p.markDirty(x)
			if x.state != sseOpen || e.next >= e.total {
				p.pop()
			} else {
				e.due = p.dueOf(e, e.next)
				p.down(0)
			}
		case e.st.cancelled.Load():
			p.pop()
		case e.out != nil:
			e.out.mu.Lock()
			over := e.out.emit(e.next + 1)
			e.out.mu.Unlock()
			e.next++
			if over || e.next >= e.total {
				e.st.finish(e.next)
				p.pop()
			} else {
				e.due = p.dueOf(e, e.next)
				p.down(0)
			}
		case e.whole || e.next+1 >= e.total:
			e.st.finish(e.total)
			p.pop()
		default:
			e.next++
			e.st.release(e.next)
			e.due = p.dueOf(e, e.next)
			p.down(0)
		}
	}
	for i, e := range p.later {
		p.push(e)
		p.later[i] = nil
	}
	p.later = p.later[:0]
	if len(p.dirty) > 0 {
		p.flush(wall)
	}
	return now
}

// markDirty queues x's pending bytes for this pass's batch.
func (p *pacer) markDirty(x *sseStream) {
	if !x.dirty {
		x.dirty = true
		p.dirty = append(p.dirty, x)
	}
}

// flush writes every dirty stream's pending bytes in one batch and settles
// the outcome: streams whose socket took everything are counted (and handed
// back when over); those whose socket was full stay dirty for the next pass,
// and fail after writeStallLimit; those whose write failed are handed back.
func (p *pacer) flush(wall time.Time) {
	live := p.dirty[:0]
	for _, x := range p.dirty {
		if x.released { // handed back (cancelled) while its socket was full
			x.dirty = false
			continue
		}
		live = append(live, x)
	}
	clear(p.dirty[len(live):])
	p.dirty = live
	ops := p.ops[:0]
	for _, x := range p.dirty {
		ops = append(ops, sendOp{fd: x.fd, b: x.pend})
	}
	p.snd.sendAll(ops)
	keep := p.dirty[:0]
	for i, x := range p.dirty {
		if x.settle(ops[i].res, wall) {
			keep = append(keep, x)
			continue
		}
		x.dirty = false
		if x.state != sseOpen {
			p.handBack(x)
		}
	}
	clear(p.dirty[len(keep):])
	p.dirty = keep
	for i := range ops {
		ops[i].b = nil
	}
	p.ops = ops
}

// handBack ends the pacer's hold on a direct stream: it releases the socket
// and finishes the stream, which wakes the handler. An open stream is marked
// abandoned (cancelled, or the server is closing), and so is one whose last
// events were framed but not all sent: its [DONE] never left.
func (p *pacer) handBack(x *sseStream) {
	if x.released {
		return
	}
	x.released = true
	if x.state == sseOpen || x.state == sseDone && len(x.pend) > 0 {
		x.state = sseAbandoned
	}
	p.snd.release(x.fd)
	x.g.st.finish(x.written)
}

// shutdown stops taking requests and hands back every direct stream it
// holds; the handlers of the other requests leave on their own (Server.watch).
func (p *pacer) shutdown() {
	p.mu.Lock()
	p.closed = true
	in := p.inbox
	p.inbox = nil
	p.mu.Unlock()
	for _, e := range append(in, p.heap...) {
		if e.direct() {
			p.handBack(e.out)
		}
	}
	for _, x := range p.dirty {
		p.handBack(x)
	}
	p.heap, p.dirty = nil, nil
	p.armMu.Lock()
	p.stopped = true
	p.alarm.close()
	p.armMu.Unlock()
	if p.snd != nil {
		p.snd.close()
	}
}

func (p *pacer) push(e *paced) {
	p.heap = append(p.heap, e)
	i := len(p.heap) - 1
	h := p.heap
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].due <= h[i].due {
			break
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

func (p *pacer) pop() {
	h := p.heap
	last := len(h) - 1
	h[0] = h[last]
	h[last] = nil
	p.heap = h[:last]
	if last > 0 {
		p.down(0)
	}
}

func (p *pacer) down(i int) {
	h := p.heap
	for {
		l, m := 2*i+1, i
		if l < len(h) && h[l].due < h[m].due {
			m = l
		}
		if l+1 < len(h) && h[l+1].due < h[m].due {
			m = l + 1
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
