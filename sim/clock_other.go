//go:build !linux

package sim

import (
	"runtime"
	"time"
)

// lockClockThread locks the calling goroutine to its OS thread. Off Linux the
// timer slack is left alone, so waits are as precise as Go's timers.
func lockClockThread() (unlock func()) {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

// fineSleep sleeps for d.
func fineSleep(d time.Duration) { time.Sleep(d) }
