// Package engine drives load: it sends requests at their intended times
// (open loop) or as fast as a fixed number of workers allow (closed loop),
// through a protocol Client it knows nothing about, and hands every finished
// record to a Sink.
//
// A run ends on time whatever the target does: an open-loop stage sends
// nothing after its deadline (the schedule's end plus a Grace) and counts
// the requests it could not send as missed; once sending stops, requests in
// flight get a drain (DrainTimeout, or InterruptedDrain when the run was
// interrupted, or none once Hurry is closed) and are then cancelled; a
// client that has not returned AbandonAfter later is abandoned, its request
// recorded as cancelled.
//
// Stage: engine.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/schedule"
	"github.com/spate-dev/spate/internal/workload"
)

// Client sends one request. Do fills rec from rec.Sent on (the engine sets
// Sent just before calling it): timestamps, token counts, and the error kind
// on failure. It must return when ctx is done, marking the record
// record.Cancelled if ctx was cancelled.
type Client interface {
	Do(ctx context.Context, req *workload.Request, rec *record.Record)
}

// ClientFunc adapts a function to a Client.
type ClientFunc func(ctx context.Context, req *workload.Request, rec *record.Record)

// Do calls f.
func (f ClientFunc) Do(ctx context.Context, req *workload.Request, rec *record.Record) {
	f(ctx, req, rec)
}

var _ Client = ClientFunc(nil)

// Sink receives the life of every request: Sent when it is sent, Record
// when it is finished. Both are called from many goroutines at once, and
// never after Run has returned.
type Sink interface {
	Sent(at, intended time.Time, warmup bool)
	Record(rec *record.Record)
}

// Defaults and bounds of the run's timing.
const (
	DefaultDrainTimeout     = 30 * time.Second
	DefaultInterruptedDrain = 2 * time.Second
	// AbandonAfter is how long Run waits, once it has cancelled the
	// requests still in flight, for their clients to return. A request
	// whose client has not is abandoned: recorded as cancelled, its
	// goroutine left to end when the client returns.
	AbandonAfter = 500 * time.Millisecond
	// OutOfFilesPause is how long a closed-loop worker waits after a
	// request this machine could not make for want of a file descriptor
	// (record.LocalFileLimit) before it sends its next.
	OutOfFilesPause = 50 * time.Millisecond
	// MinGrace and MaxGrace bound Grace.
	MinGrace = 500 * time.Millisecond
	MaxGrace = time.Second
)

// Grace is how long past the end of an open-loop schedule spanning span
// (warm-up included) a late request may still be sent: a tenth of the span,
// at least MinGrace and at most MaxGrace.
func Grace(span time.Duration) time.Duration {
	return min(max(span/10, MinGrace), MaxGrace)
}

// Config is one scenario's load.
type Config struct {
	// Pacer makes the run open-loop: request n is sent at Pacer's offset n.
	Pacer schedule.Pacer
	// Concurrency makes the run closed-loop with that many workers, each
	// sending its next request when its last one finished.
	Concurrency int
	// MaxConcurrency caps requests in flight in an open-loop run (0: no
	// cap). A request waiting for a slot keeps its intended time.
	MaxConcurrency int
	// Duration is how long to send after warm-up (0: until Requests).
	Duration time.Duration
	// Requests is how many requests to send after warm-up (0: until Duration).
	Requests int
	// Warmup is sent before the measurement and marked as warm-up.
	Warmup time.Duration
	// Grace is how late past the schedule's end an open-loop request may
	// still be sent (0: Grace of the schedule's span). The schedule ends at
	// Warmup+Duration, or, with Requests, at the last request's offset.
	Grace time.Duration
	// DrainTimeout bounds the wait for in-flight requests after the last
	// send; those still running then are cancelled.
	DrainTimeout time.Duration
	// InterruptedDrain bounds that wait when the run's context is cancelled.
	InterruptedDrain time.Duration
	// Hurry, once closed, ends the drain at once: requests in flight are
	// cancelled and recorded as cancelled without waiting for their
	// clients (a second Ctrl-C). It matters once sending has stopped.
	Hurry <-chan struct{}

	Source workload.Source
	Client Client
	Sink   Sink

	// SeqStride and SeqOffset number the records: request n of this
	// engine is record Seq n×SeqStride+SeqOffset (SeqStride 0 means 1), so
	// that a shard's records carry the run's request index.
	SeqStride, SeqOffset uint64
	// SeqBase is added to every record's Seq: a later stage of a run,
	// whose requests go on from the earlier stages' in the workload
	// (workload.Offset), numbers its records by their index there, which
	// is what observers match requests by (a probe schedule, a
	// conversation).
	SeqBase uint64
}

// Outcome says how a run went.
type Outcome struct {
	Start, End time.Time
	Sent       uint64 // requests sent, warm-up included
	// Missed counts the measured requests of an open-loop schedule that
	// were not sent by its deadline (the schedule's end plus Grace): the
	// generator or a concurrency cap could not keep up. An interrupted
	// run's unsent remainder is not missed.
	Missed uint64
	// Grace is the open-loop stage's grace past the end of its schedule
	// (0 for a closed loop, or when the schedule's end was never needed).
	Grace time.Duration
	// Abandoned counts requests whose client had not returned
	// AbandonAfter after they were cancelled (recorded as cancelled).
	Abandoned uint64
	// Interrupted is true when the run's context was cancelled before the end.
	Interrupted bool
	// Workers is how many closed-loop workers were started: Concurrency,
	// or fewer when the run was interrupted or its deadline passed while
	// they were being started.
	Workers int
}

func (c *Config) check() error {
	switch {
	case c.Pacer == nil && c.Concurrency <= 0:
		return errors.New("engine: need a rate (open loop) or a concurrency (closed loop)")
	case c.Pacer != nil && c.Concurrency > 0:
		return errors.New("engine: a rate and a concurrency are exclusive: choose open or closed loop")
	case c.Duration <= 0 && c.Requests <= 0:
		return errors.New("engine: need a duration or a number of requests")
	case c.Source == nil || c.Client == nil || c.Sink == nil:
		return errors.New("engine: Source, Client and Sink are required")
	case c.Duration < 0 || c.Requests < 0 || c.Warmup < 0 || c.MaxConcurrency < 0 || c.Grace < 0:
		return errors.New("engine: negative duration, requests, warm-up, cap or grace")
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.InterruptedDrain <= 0 {
		c.InterruptedDrain = DefaultInterruptedDrain
	}
	return nil
}

// Run sends the load cfg describes and returns when every request sent has
// been recorded (or abandoned, see AbandonAfter). Cancelling ctx stops
// sending; requests in flight get InterruptedDrain to finish and are then
// cancelled.
func Run(ctx context.Context, cfg Config) (Outcome, error) {
	if err := cfg.check(); err != nil {
		return Outcome{}, err
	}
	r := &run{cfg: cfg, stopped: make(chan struct{}), pool: sync.Pool{New: func() any { return new(record.Record) }}}
	// Requests outlive ctx by the drain; reqCancel ends them.
	reqCtx, reqCancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer reqCancel(nil)
	r.reqCtx = reqCtx
	r.out.Start = time.Now()

	var err error
	if cfg.Pacer != nil {
		err = r.openLoop(ctx)
	} else {
		err = r.closedLoop(ctx)
	}
	r.out.Interrupted = ctx.Err() != nil
	if cfg.Duration > 0 || r.out.Interrupted {
		// Past the deadline no conversation starts a new turn; a run
		// bounded by a request count lets its conversations finish.
		r.stop()
	}
	r.drain(ctx, reqCancel)
	r.out.End = time.Now()
	r.out.Sent = r.sent.Load()
	if !r.out.Interrupted {
		r.out.Missed += r.lateMissed.Load()
	}
	return r.out, err
}

type run struct {
	cfg      Config
	stopped  chan struct{} // closed at the deadline or interruption: no new conversation turns
	stopOnce sync.Once
	reqCtx   context.Context
	pool     sync.Pool
	wg       sync.WaitGroup // every request's goroutine (and the closed loop's workers)
	sent     atomic.Uint64
	flights  flights
	out      Outcome
	// sendBy, when not 0, is the offset from the start (in ns) after
	// which nothing is sent: the closed loop's end, the open loop's
	// deadline once known.
	sendBy atomic.Int64
	// lateMissed counts scheduled requests the loop dispatched before the
	// deadline whose goroutine started after it.
	lateMissed atomic.Uint64
}

// stop closes r.stopped once.
func (r *run) stop() { r.stopOnce.Do(func() { close(r.stopped) }) }

// drain waits for the requests in flight: DrainTimeout (InterruptedDrain
// once the run is interrupted, nothing once Hurry is closed), then cancels
// them and abandons those whose clients do not return.
func (r *run) drain(ctx context.Context, cancel context.CancelCauseFunc) {
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	end := time.Now().Add(r.cfg.DrainTimeout)
	interrupt := ctx.Done()
	if r.out.Interrupted {
		end, interrupt = time.Now().Add(r.cfg.InterruptedDrain), nil
	}
	timer := time.NewTimer(time.Until(end))
	defer timer.Stop()
	for {
		select {
		case <-done:
			return
		case <-interrupt:
			// Interrupted while draining: drain briefly, then cancel.
			r.out.Interrupted, interrupt = true, nil
			r.stop()
			if e := time.Now().Add(r.cfg.InterruptedDrain); e.Before(end) {
				end = e
				timer.Reset(time.Until(end))
			}
		case <-timer.C:
			// A request still running when the drain timeout ends is a
			// timeout (record.ErrDrained: the client records it so); one
			// an interruption cut short is cancelled (context.Canceled).
			cause := record.ErrDrained
			if r.out.Interrupted {
				cause = context.Canceled
			}
			r.cancel(done, func() { cancel(cause) }, false)
			return
		case <-r.cfg.Hurry:
			r.out.Interrupted = true
			r.cancel(done, func() { cancel(context.Canceled) }, true)
			return
		}
	}
}

// cancel cancels the requests in flight and waits AbandonAfter (or, in a
// hurry, not at all) for their clients to return before abandoning them.
func (r *run) cancel(done <-chan struct{}, cancel context.CancelFunc, hurry bool) {
	r.stop()
	cancel()
	if !hurry {
		t := time.NewTimer(AbandonAfter)
		defer t.Stop()
		select {
		case <-done:
			return
		case <-t.C:
		case <-r.cfg.Hurry:
		}
	}
	r.out.Abandoned = r.abandon()
}

// seq is the record number of request n (see Config.SeqStride).
func (r *run) seq(n uint64) uint64 {
	return r.cfg.SeqBase + n*max(r.cfg.SeqStride, 1) + r.cfg.SeqOffset
}
