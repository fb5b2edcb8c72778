//go:build linux

package sim

import (
	"context"
	"testing"
	"time"
)

// TestMonoEpochNeverEarly: however long the clock takes to read (a slow
// read stands in for valgrind's, tens of µs or more), the timerfd's epoch
// is not placed before the truth, so an alarm never goes off before its
// time on the pacer's clock. Read the other way round (the clock first,
// then the time since the epoch), the slow read placed the epoch 2 ms early
// and every alarm went off 2 ms before its time.
func TestMonoEpochNeverEarly(t *testing.T) {
	const slow = 2 * time.Millisecond
	epoch := time.Now()
	slowClock := func() (int64, error) {
		m, err := monotonicNow()
		time.Sleep(slow)
		return m, err
	}
	mono0, err := monoEpoch(epoch, slowClock)
	if err != nil {
		t.Fatal(err)
	}
	// The truth lies between the clock less the time since the epoch read
	// after it (a lower bound) and read before it (an upper bound).
	before := int64(time.Since(epoch))
	m, err := monotonicNow()
	if err != nil {
		t.Fatal(err)
	}
	after := int64(time.Since(epoch))
	low, high := m-after, m-before
	if mono0 < low {
		t.Fatalf("epoch %d ns before the earliest it can be (%d): alarms would go off that early", low-mono0, low)
	}
	if mono0 > high+int64(slow)+int64(5*time.Millisecond) {
		t.Fatalf("epoch %d ns after the latest it can be (%d), beyond the slow read", mono0-high, high)
	}
}

// TestTimerAlarmSetClearsExpiry: an alarm that went off is not read off
// its timerfd; the next setting clears it, so the next wait lasts until the
// new time rather than returning at once. The pacer relies on this (it
// sets the alarm after every pass, before it waits again).
func TestTimerAlarmSetClearsExpiry(t *testing.T) {
	for _, held := range []bool{false, true} {
		epoch := time.Now()
		a, err := newTimerAlarm(epoch, held)
		if err != nil {
			t.Skipf("no timerfd here: %v", err)
		}
		ctx := context.Background()
		a.set(time.Since(epoch) + time.Millisecond)
		a.wait(ctx) // goes off; its expiry stays on the timerfd
		const gap = 20 * time.Millisecond
		due := time.Since(epoch) + gap
		a.set(due)
		a.wait(ctx)
		if early := due - time.Since(epoch); early > 0 {
			t.Errorf("held=%v: the wait after a new setting returned %v before its time: the old expiry was not cleared", held, early)
		}
		a.close()
	}
}
