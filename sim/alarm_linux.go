//go:build linux

package sim

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// timerAlarm is a one-shot timerfd on CLOCK_MONOTONIC. A wait more than
// heldMargin away is covered by a Go timer (cheap, but it rounds to the
// network poller's millisecond), the rest by a ppoll(2) on the timerfd: the
// wake-up is the kernel's high-resolution timer, tens of µs after the due
// time.
//
// Held, the ppoll is a raw system call: the goroutine keeps its processor
// while it sleeps (at most heldMargin at a time; a signal, such as the
// runtime preempting it for a garbage collection, ends the sleep at once).
// Otherwise it is a blocking system call the scheduler knows of, which
// hands the processor over — and keeps the runtime's monitor thread waking
// every 20 µs around each one: on a virtual machine a wake-up then costs
// 50 µs of CPU or more against 20 µs held. Holding is for processes with
// processors to spare (see Server.New).
type timerAlarm struct {
	fd    int
	mono0 int64 // CLOCK_MONOTONIC at the epoch, ns
	epoch time.Time
	at    atomic.Int64 // the armed time, or never
	kick  chan struct{}
	timer *time.Timer
	held  bool // sleep near the deadline without giving up the processor
}

// heldMargin is how long before its deadline a wait turns from a Go timer
// into a held sleep.
const heldMargin = 2 * time.Millisecond

func newTimerAlarm(epoch time.Time, held bool) (*timerAlarm, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	mono0, err := monoEpoch(epoch, monotonicNow)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	a := &timerAlarm{fd: fd, mono0: mono0, epoch: epoch, kick: make(chan struct{}, 1), timer: time.NewTimer(time.Hour), held: held}
	a.timer.Stop()
	a.at.Store(int64(never))
	return a, nil
}

// monotonicNow reads CLOCK_MONOTONIC, in ns.
func monotonicNow() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("clock_gettime: %w", err)
	}
	return ts.Nano(), nil
}

// monoEpoch returns CLOCK_MONOTONIC at epoch, as read by now, never below
// the truth: the time since epoch is read before the clock, so the time it
// took to read the clock makes the result later, not earlier. An alarm
// then goes off at worst that long after its time, never before it (read
// the other way round, a slow read — tens of µs under valgrind — made
// every alarm go off early, and the clock pass again and again, finding
// nothing due, until its time came).
func monoEpoch(epoch time.Time, now func() (int64, error)) (int64, error) {
	since := int64(time.Since(epoch))
	mono, err := now()
	if err != nil {
		return 0, err
	}
	return mono - since, nil
}

func (a *timerAlarm) set(t time.Duration) {
	a.at.Store(int64(t))
	var spec unix.ItimerSpec // zero: disarmed
	if t != never {
		spec.Value = unix.NsecToTimespec(max(a.mono0+int64(t), 1))
	}
	// Raw system calls: neither blocks, and an ordinary one would wake the
	// runtime's monitor thread each time.
	_, _, _ = unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(a.fd), unix.TFD_TIMER_ABSTIME, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

func (a *timerAlarm) wait(ctx context.Context) {
	for ctx.Err() == nil {
		at := time.Duration(a.at.Load())
		d := at - time.Since(a.epoch)
		if at == never || d > heldMargin+time.Millisecond {
			// Far off: a Go timer to within heldMargin, or a new setting.
			select {
			case <-a.kick:
				continue
			default:
			}
			var tc <-chan time.Time
			if at != never {
				a.timer.Reset(d - heldMargin)
				tc = a.timer.C
			}
			select {
			case <-tc:
			case <-a.kick:
			case <-ctx.Done():
			}
			a.timer.Stop()
			continue
		}
		// Near: sleep on the timerfd itself.
		pfd := unix.PollFd{Fd: int32(a.fd), Events: unix.POLLIN}
		ts := unix.NsecToTimespec(int64(max(d, 0) + time.Millisecond))
		var n uintptr
		if a.held {
			n, _, _ = unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		} else {
			n, _, _ = unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		}
		if n == 1 && pfd.Revents&unix.POLLIN != 0 {
			// The expiry is not read off the timerfd: every setting
			// (timerfd_settime) clears it, and the clock sets the alarm
			// after each pass, before it waits again — a system call per
			// tick saved. Only set is relied on to make it unreadable.
			return
		}
		// Timed out (the alarm was moved later) or interrupted: look again.
	}
}

func (a *timerAlarm) close() {
	if a.fd >= 0 {
		unix.Close(a.fd)
		a.fd = -1
	}
}

func (a *timerAlarm) lockThread() bool { return false }

// newAlarm returns the clock's alarm: a timerfd, or the portable alarm when
// portable is set or the timerfd cannot be made.
func newAlarm(epoch time.Time, portable, held bool) alarm {
	if !portable {
		if a, err := newTimerAlarm(epoch, held); err == nil {
			return a
		}
	}
	return newSleepAlarm(epoch)
}
