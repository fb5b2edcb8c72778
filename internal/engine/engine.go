// Package engine drives load: it sends requests at their intended times
// (open loop) or as fast as a fixed number of workers allow (closed loop),
// through a protocol Client it knows nothing about, and hands every finished
// record to a Sink.
//
// Stage: engine.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"strconv"

	"github.com/spate-dev/spate/internal/metrics/check"
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
// when it is finished. Both are called from many goroutines at once.
type Sink interface {
	Sent(at, intended time.Time, warmup bool)
	Record(rec *record.Record)
}

// Defaults for Config's drain timeouts.
const (
	DefaultDrainTimeout     = 30 * time.Second
	DefaultInterruptedDrain = 2 * time.Second
)

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
	// DrainTimeout bounds the wait for in-flight requests after the last
	// send; those still running then are cancelled.
	DrainTimeout time.Duration
	// InterruptedDrain bounds that wait when the run's context is cancelled.
	InterruptedDrain time.Duration

	Source workload.Source
	Client Client
	Sink   Sink

	// SeqStride and SeqOffset number the records: request n of this
	// engine is record Seq n×SeqStride+SeqOffset (SeqStride 0 means 1), so
	// that a shard's records carry the run's request index.
	SeqStride, SeqOffset uint64
}

// Outcome says how a run went.
type Outcome struct {
	Start, End  time.Time
	Sent        uint64 // requests sent, warm-up included
	Interrupted bool   // the run's context was cancelled before the end
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
	case c.Duration < 0 || c.Requests < 0 || c.Warmup < 0 || c.MaxConcurrency < 0:
		return errors.New("engine: negative duration, requests, warm-up or cap")
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
// been recorded. Cancelling ctx stops sending; requests in flight get
// InterruptedDrain to finish and are then cancelled.
func Run(ctx context.Context, cfg Config) (Outcome, error) {
	if err := cfg.check(); err != nil {
		return Outcome{}, err
	}
	r := &run{cfg: cfg, stopped: make(chan struct{}), pool: sync.Pool{New: func() any { return new(record.Record) }}}
	// Requests outlive ctx by the drain; reqCancel ends them.
	reqCtx, reqCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer reqCancel()
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
		close(r.stopped)
	}

	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	drain := cfg.DrainTimeout
	if r.out.Interrupted {
		drain = cfg.InterruptedDrain
	}
	timer := time.NewTimer(drain)
	defer timer.Stop()
	var interrupt <-chan struct{}
	if !r.out.Interrupted {
		interrupt = ctx.Done()
	}
	select {
	case <-done:
	case <-timer.C:
		reqCancel()
		<-done
	case <-interrupt:
		// Interrupted while draining: drain briefly, then cancel.
		r.out.Interrupted = true
		timer.Reset(cfg.InterruptedDrain)
		select {
		case <-done:
		case <-timer.C:
			reqCancel()
			<-done
		}
	}
	r.out.End = time.Now()
	r.out.Sent = r.sent.Load()
	return r.out, err
}

type run struct {
	cfg     Config
	stopped chan struct{} // closed at the deadline or interruption: no new conversation turns
	reqCtx  context.Context
	pool    sync.Pool
	wg      sync.WaitGroup
	sent    atomic.Uint64
	out     Outcome
}

// seq is the record number of request n (see Config.SeqStride).
func (r *run) seq(n uint64) uint64 {
	return n*max(r.cfg.SeqStride, 1) + r.cfg.SeqOffset
}

// send dispatches one request in its own goroutine; release, if not nil,
// is called when it is finished.
func (r *run) send(req *workload.Request, n uint64, intended time.Time, warm bool, slotWait time.Duration, release func()) {
	rec := r.pool.Get().(*record.Record)
	rec.Reset()
	rec.Seq, rec.Warmup, rec.Intended, rec.SlotWait, rec.Intent = r.seq(n), warm, intended, slotWait, req.Intent
	rec.PacedTokens = req.PacedTokens
	r.sent.Add(1)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.do(req, rec)
		if release != nil {
			release()
		}
	}()
}

// do sends req and records it, in the calling goroutine; a conversation
// is sent turn by turn.
func (r *run) do(req *workload.Request, rec *record.Record) {
	if len(req.Turns) > 0 {
		r.converse(req, rec)
		return
	}
	r.doOne(req, rec)
}

// doOne sends one request and records it.
func (r *run) doOne(req *workload.Request, rec *record.Record) {
	r.exec(req, rec)
	r.cfg.Sink.Record(rec)
	r.pool.Put(rec)
}

// exec sends req and fills rec: timings from the client, then the
// request's labels and the outcome of its answer checks.
func (r *run) exec(req *workload.Request, rec *record.Record) {
	rec.Sent = time.Now()
	if rec.Intended.IsZero() {
		rec.Intended = rec.Sent
	}
	r.cfg.Sink.Sent(rec.Sent, rec.Intended, rec.Warmup)
	r.cfg.Client.Do(r.reqCtx, req, rec)
	if rec.End.IsZero() {
		rec.End = time.Now()
	}
	rec.Labels = append(rec.Labels, req.Labels...)
	rec.NormInput, rec.Complexity = req.NormTokens, req.Complexity
	if req.Checks != nil && !rec.Failed() {
		a := check.Answer{Text: rec.Answer, ToolCalls: rec.ToolCalls}
		for _, c := range req.Checks.Checks {
			rec.Checks = append(rec.Checks, record.CheckResult{Name: c.Name(), Pass: c.Pass(a)})
		}
	}
}

// turnLabels are the labels of conversation turns 1 to 32; later turns
// share the last.
var turnLabels = func() []record.Label {
	var l []record.Label
	for i := 1; i <= 32; i++ {
		v := strconv.Itoa(i)
		if i == 32 {
			v = "32+"
		}
		l = append(l, record.Label{Key: "turn", Value: v})
	}
	return l
}()

// converse sends a conversation's turns in order, each one record: the
// history grows with every user message and the answer the server gave
// (kept from the record), with the turn's think time before each later
// turn. A failed turn ends the conversation; so does the end of sending,
// before a new turn. The first turn is intended at the conversation's
// intended time, later ones when their think time is over.
func (r *run) converse(conv *workload.Request, rec *record.Record) {
	history := append([]workload.Message(nil), conv.Messages...)
	seq, warm := rec.Seq, rec.Warmup
	for t, turn := range conv.Turns {
		if t > 0 {
			if turn.Think > 0 {
				timer := time.NewTimer(turn.Think)
				select {
				case <-timer.C:
				case <-r.stopped:
					timer.Stop()
					return
				case <-r.reqCtx.Done():
					timer.Stop()
					return
				}
			}
			select {
			case <-r.stopped:
				return
			default:
			}
			rec = r.pool.Get().(*record.Record)
			rec.Reset()
			rec.Seq, rec.Warmup, rec.Intent, rec.Intended = seq, warm, conv.Intent, time.Now()
			r.sent.Add(1)
		}
		history = append(history, workload.Message{Role: "user", Content: turn.Prompt})
		req := &workload.Request{
			Messages: history, MaxTokens: turn.MaxTokens, InputTokens: turn.InputTokens, KeepAnswer: true,
			Intent: conv.Intent, Session: conv.Session, Tools: conv.Tools, Checks: conv.Checks,
			Temperature: conv.Temperature, TopP: conv.TopP, Model: conv.Model, Logprobs: conv.Logprobs,
			Labels: append(append(make([]workload.Label, 0, len(conv.Labels)+1), conv.Labels...), turnLabels[min(t, len(turnLabels)-1)]),
			// No NormTokens: a turn also sends the history, whose answers
			// the workload could not weigh; normalised throughput is then
			// not reported (see metrics).
			Complexity: conv.Complexity,
		}
		r.exec(req, rec)
		failed, answer := rec.Failed(), string(rec.Answer)
		r.cfg.Sink.Record(rec)
		r.pool.Put(rec)
		if failed {
			return
		}
		history = append(history, workload.Message{Role: "assistant", Content: answer})
	}
}

func (r *run) openLoop(ctx context.Context) error {
	cfg := r.cfg
	var sem chan struct{}
	if cfg.MaxConcurrency > 0 {
		sem = make(chan struct{}, cfg.MaxConcurrency)
	}
	release := func() { <-sem }
	if sem == nil {
		release = nil
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	end := cfg.Warmup + cfg.Duration
	measured := 0
	var prev time.Duration
	// capDebt is how long the loop has waited for slots since it was last
	// on schedule: the part of the current lag the cap caused.
	var capDebt time.Duration
	for n := uint64(0); ; n++ {
		off := cfg.Pacer.Pace(n, prev)
		if off < prev {
			return fmt.Errorf("engine: pacer went back in time at request %d", n)
		}
		prev = off
		if cfg.Duration > 0 && off >= end {
			return nil
		}
		warm := off < cfg.Warmup
		if !warm {
			if cfg.Requests > 0 && measured >= cfg.Requests {
				return nil
			}
			measured++
		}
		req, err := cfg.Source.Request(n)
		if err != nil {
			return fmt.Errorf("making request %d: %w", n, err)
		}
		intended := r.out.Start.Add(off)
		if d := time.Until(intended); d > 0 {
			capDebt = 0 // ahead of schedule again: earlier waits no longer delay anyone
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return nil
			}
		} else if ctx.Err() != nil {
			return nil
		}
		var wait time.Duration
		if sem != nil {
			select {
			case sem <- struct{}{}:
			default:
				t0 := time.Now()
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return nil
				}
				capDebt += time.Since(t0)
			}
			// The lag the cap caused: every slot wait since the loop last
			// was on schedule, as far as this request is late.
			wait = min(capDebt, time.Since(intended))
		}
		r.send(req, n, intended, warm, wait, release)
	}
}

func (r *run) closedLoop(ctx context.Context) error {
	cfg := r.cfg
	var next atomic.Uint64
	var measured atomic.Int64
	stopAt := r.out.Start.Add(cfg.Warmup + cfg.Duration)
	var errOnce sync.Once
	var firstErr error
	var workers sync.WaitGroup
	allSent := make(chan struct{}) // closed when the last measured request is dispatched
	var allSentOnce sync.Once
	for w := 0; w < cfg.Concurrency; w++ {
		workers.Add(1)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer workers.Done()
			for ctx.Err() == nil {
				now := time.Now()
				if cfg.Duration > 0 && !now.Before(stopAt) {
					return
				}
				warm := now.Sub(r.out.Start) < cfg.Warmup
				if !warm && cfg.Requests > 0 {
					m := measured.Add(1)
					if m > int64(cfg.Requests) {
						return
					}
					if m == int64(cfg.Requests) {
						allSentOnce.Do(func() { close(allSent) })
					}
				}
				n := next.Add(1) - 1
				req, err := cfg.Source.Request(n)
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("making request %d: %w", n, err) })
					return
				}
				rec := r.pool.Get().(*record.Record)
				rec.Reset()
				rec.Seq, rec.Warmup, rec.Intent = r.seq(n), warm, req.Intent
				r.sent.Add(1)
				r.do(req, rec)
			}
		}()
	}
	// Sending stops at the deadline, on interruption, or when every worker
	// has run out of requests; Run then drains what is in flight.
	idle := make(chan struct{})
	go func() { workers.Wait(); close(idle) }()
	var deadline <-chan time.Time
	if cfg.Duration > 0 {
		t := time.NewTimer(time.Until(stopAt))
		defer t.Stop()
		deadline = t.C
	}
	select {
	case <-idle:
	case <-allSent:
	case <-deadline:
	case <-ctx.Done():
	}
	errOnce.Do(func() {})
	return firstErr
}
