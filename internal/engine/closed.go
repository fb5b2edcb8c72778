package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spate-dev/spate/internal/record"
)

// closedLoop runs cfg.Concurrency workers, each sending its next request
// when its last one is recorded, until the duration is over, the request
// count is reached or ctx is cancelled. Nothing starts after the deadline.
func (r *run) closedLoop(ctx context.Context) error {
	cfg := r.cfg
	var next atomic.Uint64
	var measured atomic.Int64
	stopAt := r.out.Start.Add(cfg.Warmup + cfg.Duration)
	if cfg.Duration > 0 {
		r.sendBy.Store(int64(cfg.Warmup + cfg.Duration))
	}
	var errOnce sync.Once
	var firstErr error
	var workers sync.WaitGroup
	allSent := make(chan struct{}) // closed when the last measured request is dispatched
	var allSentOnce sync.Once
	w := 0
	defer func() { r.out.Workers = w }()
	for ; w < cfg.Concurrency; w++ {
		// Starting millions of workers takes seconds: the loop stops
		// starting them on interruption and at the deadline, as the
		// workers themselves would stop at once. (The clock is read every
		// 1024 workers: it costs more than a start.)
		if ctx.Err() != nil || cfg.Duration > 0 && w%1024 == 0 && !time.Now().Before(stopAt) {
			break
		}
		workers.Add(1)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer workers.Done()
			var ready time.Time // when this worker was last free to send
			for ctx.Err() == nil {
				now := ready // read at the end of the last turn, just before
				if now.IsZero() {
					now = time.Now()
				}
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
				rec.Seq, rec.Warmup, rec.Intent, rec.ClosedLoop = r.seq(n), warm, req.Intent, true
				ok, kind := r.doKind(req, rec, ready)
				if !ok {
					return
				}
				if kind == record.LocalFileLimit {
					// This machine had no file descriptor for the
					// request, and the next would fail the same at once:
					// wait for one to free rather than spin, failing
					// thousands a second.
					t := time.NewTimer(OutOfFilesPause)
					select {
					case <-t.C:
					case <-ctx.Done():
						t.Stop()
					}
				}
				ready = time.Now()
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
