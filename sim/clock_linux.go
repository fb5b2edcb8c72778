//go:build linux

package sim

import (
	"runtime"
	"syscall"
	"time"
)

const prSetTimerslack = 29 // PR_SET_TIMERSLACK from <linux/prctl.h>

// lockClockThread locks the calling goroutine to its OS thread and sets the
// thread's timer slack to 1 ns, so that fineSleep wakes within tens of
// microseconds instead of the default 50 µs slack plus the poller's 1 ms.
// The returned function undoes the lock (the slack stays with the thread,
// which is harmless).
func lockClockThread() (unlock func()) {
	runtime.LockOSThread()
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1, 0)
	return runtime.UnlockOSThread
}

// fineSleep sleeps for d with nanosleep(2) on the current thread.
func fineSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil) // EINTR just ends the slice early
}
