//go:build !linux

package tokenizer

import "time"

// threadCPU runs f and returns its wall time (the thread's CPU time is
// read on Linux only).
func threadCPU(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}
