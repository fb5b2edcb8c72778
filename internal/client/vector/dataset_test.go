package vector

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/capread"
	"github.com/spate-dev/spate/internal/workload"
)

// endlessFIFO makes a FIFO that gives blank lines until its reader goes
// away or the test ends, and returns its path.
func endlessFIFO(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "blank.jsonl")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		f, err := os.OpenFile(path, os.O_WRONLY, 0) // until a reader opens it
		if err != nil {
			return
		}
		defer f.Close()
		blank := []byte(strings.Repeat("\n", 64<<10))
		for {
			select {
			case <-stop: // the test ended (a reader that never stops)
				return
			default:
			}
			if _, err := f.Write(blank); err != nil {
				return // the reader closed it
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		// A writer still waiting for a reader is let go.
		if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		wg.Wait()
	})
	return path
}

// readBounded runs ReadFileContext, failing the test if it is still
// reading after a bound far above what it takes (milliseconds).
func readBounded(t *testing.T, ctx context.Context, path string, l workload.Limits) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := ReadFileContext(ctx, path, l)
		done <- err
	}()
	select {
	case err := <-done:
		t.Log(err)
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: still reading after 30 s", path)
		return nil
	}
}

// TestEndlessDataset: a dataset that never ends is an error naming the
// file and the limit (a FIFO of blank lines read forever, without a size
// limit and deaf to Ctrl-C; /dev/zero is one line over the line limit),
// and a cancelled read stops.
func TestEndlessDataset(t *testing.T) {
	t.Run("blank lines over fileSize", func(t *testing.T) {
		path := endlessFIFO(t)
		err := readBounded(t, context.Background(), path, workload.Limits{FileSize: 1 << 20})
		if !errors.Is(err, capread.ErrTooLarge) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "--limit fileSize=") {
			t.Fatalf("error %v: want the file over its fileSize limit", err)
		}
	})
	t.Run("blank lines, cancelled", func(t *testing.T) {
		path := endlessFIFO(t)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		err := readBounded(t, ctx, path, workload.Limits{})
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), path) {
			t.Fatalf("error %v: want the read stopped by its context", err)
		}
	})
	t.Run("/dev/zero over lineSize", func(t *testing.T) {
		if _, err := os.Stat("/dev/zero"); err != nil {
			t.Skip("no /dev/zero")
		}
		err := readBounded(t, context.Background(), "/dev/zero", workload.Limits{LineSize: 1 << 20})
		if err == nil || !strings.Contains(err.Error(), "/dev/zero") || !strings.Contains(err.Error(), "line 1 is over the lineSize limit") {
			t.Fatalf("error %v: want line 1 over the lineSize limit", err)
		}
	})
	t.Run("a regular file over fileSize is not read", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "big.jsonl")
		if err := os.WriteFile(path, []byte(`{"vector":[1]}`+"\n"+`{"query":[1]}`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		err := readBounded(t, context.Background(), path, workload.Limits{FileSize: 8})
		if !errors.Is(err, capread.ErrTooLarge) || !strings.Contains(err.Error(), path) {
			t.Fatalf("error %v: want the file over its fileSize limit", err)
		}
		if _, err := ReadFileContext(context.Background(), path, workload.Limits{}); err != nil {
			t.Fatalf("under the default limits: %v", err)
		}
	})
}
