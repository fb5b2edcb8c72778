//go:build unix

package capread

import (
	"os"
	"syscall"
)

// releasePipe opens the FIFO at path for writing without waiting, and
// closes it at once: a reader waiting in its open for a writer returns.
// It does nothing when no reader waits yet (the open fails) or the FIFO
// may not be written.
func releasePipe(path string) {
	if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
}
