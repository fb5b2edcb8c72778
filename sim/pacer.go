package sim

import (
	"context"
	"sync"
	"time"
)

// pacerQuantum is the shortest sleep of the pacer between two passes.
const pacerQuantum = 100 * time.Microsecond

// pacer is the deterministic mode's clock: one goroutine that keeps every
// in-flight request in a min-heap on the due time of its next token and, each
// time it wakes, releases the tokens of all requests due by then. Token k of
// a request is due at start + TTFT + k·ITL (plus a stall, if one was drawn),
// an absolute time, so lateness never accumulates.
type pacer struct {
	ttft, itl time.Duration
	epoch     time.Time

	mu    sync.Mutex
	inbox []*paced
	spare []*paced
	kick  chan struct{}

	heap []*paced
}

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
	due     time.Duration // of the next release
}

func newPacer(ttft, itl time.Duration) *pacer {
	return &pacer{ttft: ttft, itl: itl, epoch: time.Now(), kick: make(chan struct{}, 1)}
}

// since converts a wall-clock instant to pacer time.
func (p *pacer) since(t time.Time) time.Duration { return t.Sub(p.epoch) }

// dueOf returns when token k of e is due.
func (p *pacer) dueOf(e *paced, k int) time.Duration {
	d := e.start + p.ttft + time.Duration(k)*p.itl
	if e.stallAt >= 0 && k >= e.stallAt {
		d += e.stall
	}
	return d
}

// submit hands a request to the pacer.
func (p *pacer) submit(e *paced) {
	p.mu.Lock()
	p.inbox = append(p.inbox, e)
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run is the pacer's loop; it returns when ctx is done.
func (p *pacer) run(ctx context.Context) {
	unlock := lockClockThread()
	defer unlock()
	w := newWaiter()
	for {
		select {
		case <-p.kick:
		default:
		}
		p.mu.Lock()
		in := p.inbox
		p.inbox = p.spare[:0]
		p.mu.Unlock()
		for i, e := range in {
			switch {
			case e.whole && e.total == 0:
				e.due = e.start + e.fixed
			case e.whole:
				e.due = p.dueOf(e, e.total-1)
			default:
				e.due = p.dueOf(e, 0)
			}
			p.push(e)
			in[i] = nil
		}
		p.spare = in

		now := time.Since(p.epoch)
		for len(p.heap) > 0 && p.heap[0].due <= now {
			e := p.heap[0]
			switch {
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

		if len(p.heap) == 0 {
			select {
			case <-p.kick:
				// Put it back: the top of the loop drains it.
				p.kickSelf()
			case <-ctx.Done():
				return
			}
			continue
		}
		// Wake no more often than every pacerQuantum: releasing everything
		// due by then in one pass costs far less than a wake-up per token,
		// and adds at most pacerQuantum of lateness.
		next := max(p.heap[0].due, now+pacerQuantum)
		w.until(ctx, p.epoch.Add(next), p.kick)
		if ctx.Err() != nil {
			return
		}
	}
}

func (p *pacer) kickSelf() {
	select {
	case p.kick <- struct{}{}:
	default:
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
