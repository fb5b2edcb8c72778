//go:build unix

package workload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/spate-dev/spate/experiment"
)

// TestEndlessDatasetCancelled reads a dataset that never ends, a FIFO fed
// valid lines for as long as it is read, with no limit it could reach:
// the read ends when the run is cancelled, and at once. (It read
// /dev/zero before, which a fast machine read up to its line limit
// within the 50 ms before the cancel.)
func TestEndlessDatasetCancelled(t *testing.T) {
	p := filepath.Join(t.TempDir(), "endless.jsonl")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	fed := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			fed <- err
			return
		}
		defer f.Close()
		line := []byte(`{"prompt":"a b c"}` + "\n")
		for {
			if _, err := f.Write(line); err != nil {
				fed <- nil // the reader closed the FIFO
				return
			}
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := Build(experiment.Workload{Dataset: p}, BuildOptions{Context: ctx, Limits: Limits{FileSize: 1 << 40}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled read: %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the cancelled read took %v", took)
	}
	// The writer ends when the read closed its end (a FIFO without a
	// reader refuses writes); an open that never returned would hang.
	select {
	case err := <-fed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the FIFO's reader never closed it")
	}
}
