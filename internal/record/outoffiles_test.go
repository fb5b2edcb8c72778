package record

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
)

// TestOutOfFiles: this machine's want of a file descriptor is told from
// the target's refusal, however the transport wraps it.
func TestOutOfFiles(t *testing.T) {
	dial := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", err)}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"EMFILE at the dial", dial(syscall.EMFILE), true},
		{"ENFILE at the dial", dial(syscall.ENFILE), true},
		{"EMFILE wrapped again", fmt.Errorf("taking over a connection: %w", dial(syscall.EMFILE)), true},
		{"the target refused", dial(syscall.ECONNREFUSED), false},
		{"another error", errors.New("too many open files"), false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := OutOfFiles(tc.err); got != tc.want {
				t.Errorf("OutOfFiles(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
