//go:build unix

package capread

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestFIFOCancel reads FIFOs that block, one in its open (no writer ever
// comes) and one in a read (a writer that writes a line and then holds the
// FIFO open without a word more): cancelling the context ends the read
// promptly with the context's error, and leaves no goroutine behind.
func TestFIFOCancel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writer bool
	}{{"no writer: the open blocks", false}, {"a silent writer: the read blocks", true}} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Skipf("no FIFOs here: %v", err)
			}
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var w *os.File
			if tc.writer {
				// O_RDWR does not wait for a reader (Linux); the reader's
				// open then finds a writer.
				var err error
				if w, err = os.OpenFile(p, os.O_RDWR, 0); err != nil {
					t.Skipf("cannot hold a FIFO open: %v", err)
				}
				defer w.Close()
				w.WriteString("a line\n")
			}
			done := make(chan error, 1)
			go func() {
				_, err := ReadFile(ctx, p, 1<<20, "fileSize")
				done <- err
			}()
			time.Sleep(100 * time.Millisecond) // into the open or the read
			t0 := time.Now()
			cancel()
			select {
			case err := <-done:
				t.Logf("returned %v after cancel: %v", time.Since(t0), err)
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("err %v, want context.Canceled", err)
				}
			case <-time.After(10 * time.Second): // promptly: 10 ms or so
				t.Fatal("the read did not end within 10 s of cancel")
			}
			if w != nil {
				w.Close()
			}
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				t.Errorf("%d goroutines after the read, %d before", n, before)
			}
		})
	}
}
