package sim

import (
	"context"
	"time"
)

// Precise waiting. Go's timers are woken by the network poller, whose sleep
// has millisecond granularity on Linux, so a timer fires up to ~1 ms late on
// an idle process: too coarse for a ground-truth clock. The pacer and the
// engine driver therefore run on a goroutine locked to its OS thread
// (lockClockThread) and finish each wait with a short nanosleep with 1 ns
// timer slack (fineSleep), after a Go timer has covered all but the last
// couple of milliseconds (so that long waits can be interrupted).

const (
	// coarseMargin is how long before a deadline a Go-timer wait hands over
	// to fine sleeps.
	coarseMargin = 2 * time.Millisecond
	// fineSlice bounds one fine sleep, so that an interrupt (a new request)
	// is noticed within it.
	fineSlice = 500 * time.Microsecond
)

// waiter performs precise waits for one clock goroutine.
type waiter struct {
	timer *time.Timer
}

func newWaiter() *waiter {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &waiter{timer: t}
}

// until waits until deadline, or until interrupt has a value pending or ctx
// is done. It does not consume from interrupt. It reports whether the
// deadline was reached.
func (w *waiter) until(ctx context.Context, deadline time.Time, interrupt chan struct{}) bool {
	for {
		d := time.Until(deadline)
		if d <= 0 {
			return true
		}
		if len(interrupt) > 0 || ctx.Err() != nil {
			return false
		}
		if d > coarseMargin+fineSlice {
			w.timer.Reset(d - coarseMargin)
			select {
			case <-w.timer.C:
			case <-interrupt:
				// Put the token back for the caller, which drains it.
				select {
				case interrupt <- struct{}{}:
				default:
				}
				w.timer.Stop()
				return false
			case <-ctx.Done():
				w.timer.Stop()
				return false
			}
			continue
		}
		fineSleep(min(d, fineSlice))
	}
}
