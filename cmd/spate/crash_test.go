//go:build unix

package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCrashIsNotAUsageError: a crash of the spate process ends it by
// SIGABRT with the goroutines' stacks, not with exit code 2 (Go's own for
// a crash, which is spate's usage error). SIGQUIT stands in for the crash:
// the Go runtime handles it as it handles a fatal error, dump and exit.
func TestCrashIsNotAUsageError(t *testing.T) {
	bin := spateBinary(t)
	cmd := exec.Command(bin, "sim", "--addr", "127.0.0.1:0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Past main's start, where spate sets how it crashes: a fixed 300 ms
	// was too short for a loaded machine (the runtime's own exit code 2,
	// three suites at once). The simulator waits for requests by then.
	asleep(t, cmd.Process.Pid)
	if err := cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("spate did not end within 30 s of SIGQUIT")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("spate ended with %v after SIGQUIT, want a crash", err)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGABRT {
		t.Errorf("spate ended with %v (exit code %d) after a crash, want SIGABRT (exit code 2 is the usage error)", ee, ee.ExitCode())
	}
	if !strings.Contains(stderr.String(), "goroutine ") {
		t.Errorf("no goroutine stacks on stderr: %.300s", stderr.String())
	}
}
