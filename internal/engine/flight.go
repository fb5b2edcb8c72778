package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/spate-dev/spate/internal/record"
)

// A flight is one request between its send and its record. The engine
// keeps every flight so that, when a client does not return after being
// cancelled, it can record the request itself and return on time.
type flight struct {
	state atomic.Uint32
	// prev and next link the flights in flight (flights.mu).
	prev, next *flight
	// What the engine knows of the request, copied at the send: the
	// record itself belongs to the client until it returns.
	seq            uint64
	warmup         bool
	intended, sent time.Time
	slotWait       time.Duration
	intent         string
}

// The states of a flight.
const (
	inFlight  uint32 = iota // the client has the request
	recording               // the client returned; the sink is being given the record
	recorded                // the sink has the record
	abandoned               // the engine recorded it as cancelled: the client's record is dropped
)

// flights are the requests in flight: a list linked through the flights
// (no hashing per request, as a set in a map had).
type flights struct {
	mu     sync.Mutex
	head   *flight
	closed bool // abandoned: nothing more is sent, and the list is let go
	// free holds settled flights for reuse (no allocation per request).
	// Only a flight settled before abandon goes there: abandon may still
	// hold the others.
	free []*flight
}

// add puts f in the list.
func (fs *flights) add(f *flight) {
	f.next = fs.head
	if fs.head != nil {
		fs.head.prev = f
	}
	fs.head = f
}

// remove takes f out of the list.
func (fs *flights) remove(f *flight) {
	if f.prev != nil {
		f.prev.next = f.next
	} else {
		fs.head = f.next
	}
	if f.next != nil {
		f.next.prev = f.prev
	}
	f.prev, f.next = nil, nil
}

// begin sends rec: it stamps rec.Sent, tells the sink and registers the
// flight. It returns nil, sending nothing, once the engine has abandoned
// its requests (the run is over) or past the time to send by (see
// run.sendBy), where a scheduled request (not a conversation's later
// turn) is missed.
func (r *run) begin(rec *record.Record, scheduled bool) *flight {
	fs := &r.flights
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.closed {
		return nil
	}
	now := time.Now()
	if by := r.sendBy.Load(); by != 0 && int64(now.Sub(r.out.Start)) > by {
		if scheduled && !rec.Warmup && r.cfg.Pacer != nil {
			r.lateMissed.Add(1)
		}
		return nil
	}
	rec.Sent = now
	if rec.Intended.IsZero() {
		rec.Intended = rec.Sent
	}
	var f *flight
	if n := len(fs.free); n > 0 {
		f, fs.free = fs.free[n-1], fs.free[:n-1]
		f.state.Store(inFlight)
	} else {
		f = new(flight)
	}
	f.seq, f.warmup, f.intended, f.sent, f.slotWait, f.intent = rec.Seq, rec.Warmup, rec.Intended, rec.Sent, rec.SlotWait, rec.Intent
	fs.add(f)
	r.sent.Add(1)
	// Under the lock, so that a flight abandon sees has been sent.
	r.cfg.Sink.Sent(rec.Sent, rec.Intended, rec.Warmup)
	return f
}

// settle gives the sink the record of a flight whose client returned. It
// reports false, recording nothing, when the engine has abandoned the
// flight (and recorded it as cancelled) in the meantime.
func (r *run) settle(f *flight, rec *record.Record) bool {
	if !f.state.CompareAndSwap(inFlight, recording) {
		return false
	}
	r.cfg.Sink.Record(rec)
	f.state.Store(recorded)
	fs := &r.flights
	fs.mu.Lock()
	if !fs.closed { // abandon let the whole list go
		fs.remove(f)
		fs.free = append(fs.free, f)
	}
	fs.mu.Unlock()
	return true
}

// abandonMsg is the error message of an abandoned request.
const abandonMsg = "cancelled: the client had not returned when the run ended"

// abandon ends the run's sending for good and records every request still
// with its client as cancelled; it waits for the records the sink is being
// given and returns how many requests it abandoned.
func (r *run) abandon() uint64 {
	fs := &r.flights
	var gone, busy []*flight
	fs.mu.Lock()
	fs.closed = true
	for f := fs.head; f != nil; f = f.next {
		if f.state.CompareAndSwap(inFlight, abandoned) {
			gone = append(gone, f)
		} else {
			busy = append(busy, f)
		}
	}
	fs.head = nil
	fs.mu.Unlock()
	now := time.Now()
	var rec record.Record
	for _, f := range gone {
		rec.Reset()
		rec.Seq, rec.Warmup, rec.Intended, rec.Sent, rec.SlotWait, rec.Intent = f.seq, f.warmup, f.intended, f.sent, f.slotWait, f.intent
		rec.Fail(record.Cancelled, abandonMsg, now)
		r.cfg.Sink.Record(&rec)
	}
	// A client that returned just before is giving the sink its record:
	// a matter of microseconds.
	for _, f := range busy {
		for f.state.Load() == recording {
			time.Sleep(50 * time.Microsecond)
		}
	}
	return uint64(len(gone))
}
