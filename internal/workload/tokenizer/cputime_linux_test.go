//go:build linux

package tokenizer

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU runs f locked to one OS thread and returns the CPU time that
// thread spent in it. Unlike the wall clock, it does not grow when other
// processes take the machine's cores (three test suites at once made a
// count's wall time ×10 its CPU time).
func threadCPU(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &before) != nil {
		start := time.Now()
		f()
		return time.Since(start)
	}
	f()
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &after)
	return time.Duration(after.Utime.Nano() - before.Utime.Nano() + after.Stime.Nano() - before.Stime.Nano())
}
