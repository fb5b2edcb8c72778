package sim

import (
	"context"
	"math"
	"sync"
	"time"
)

// never is an alarm time that does not come.
const never = time.Duration(math.MaxInt64)

// alarm wakes a clock goroutine at a set time on its clock's time line
// (durations since the clock's epoch).
type alarm interface {
	// set makes the alarm go off at t (never: not at all); a t already
	// past makes it go off at once. Any goroutine may call it.
	set(t time.Duration)
	// wait blocks until the alarm goes off (or, for some alarms, ctx is
	// done: the clock also sets the alarm to 0 when ctx ends).
	wait(ctx context.Context)
	close()
	// lockThread reports whether the waiting goroutine should be locked to
	// its OS thread (the portable alarm finishes its waits with short
	// sleeps of that thread).
	lockThread() bool
}

// sleepAlarm is the portable alarm: a Go timer for all but the last couple
// of milliseconds, then short sleeps of the (locked) thread; see waiter.
type sleepAlarm struct {
	epoch time.Time
	w     *waiter
	kick  chan struct{}

	mu sync.Mutex
	at time.Duration
}

func newSleepAlarm(epoch time.Time) *sleepAlarm {
	return &sleepAlarm{epoch: epoch, w: newWaiter(), kick: make(chan struct{}, 1), at: never}
}

func (a *sleepAlarm) set(t time.Duration) {
	a.mu.Lock()
	a.at = t
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

func (a *sleepAlarm) wait(ctx context.Context) {
	for ctx.Err() == nil {
		select {
		case <-a.kick:
		default:
		}
		a.mu.Lock()
		at := a.at
		a.mu.Unlock()
		if at == never {
			select {
			case <-a.kick: // a new setting: read it
			case <-ctx.Done():
			}
			continue
		}
		if a.w.until(ctx, a.epoch.Add(at), a.kick) {
			a.mu.Lock()
			if a.at == at {
				a.at = never // one-shot, like the timerfd
			}
			a.mu.Unlock()
			return
		}
	}
}

func (a *sleepAlarm) close()           {}
func (a *sleepAlarm) lockThread() bool { return true }
