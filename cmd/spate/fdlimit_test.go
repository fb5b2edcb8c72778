package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/fdlimit"
)

// TestConcurrencyOverTheFileLimit: a closed loop or an open loop's cap
// that needs more file descriptors than the process may open is refused
// up front (exit 2), saying the limit and ulimit -n, where ten million
// workers ran 48 s past a 3 s duration, deaf to Ctrl-C.
func TestConcurrencyOverTheFileLimit(t *testing.T) {
	lim, ok := fdlimit.Current()
	if !ok {
		t.Skip("no RLIMIT_NOFILE here")
	}
	target, _ := hangServer(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"--concurrency", []string{"--concurrency", "10000000"}},
		{"--max-concurrency", []string{"--rate", "10", "--max-concurrency", "10000000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--target", target, "--model", "x", "--duration", "3s", "--quiet", "--out", t.TempDir() + "/r.json"}, tc.args...)
			t0 := time.Now()
			code, _, stderr := cli(t, context.Background(), args...)
			t.Logf("exit %d after %v (RLIMIT_NOFILE %d): %s", code, time.Since(t0), lim.Soft, stderr)
			if code != exitUsage || !strings.Contains(stderr, tc.name+" 10000000 needs a file descriptor") || !strings.Contains(stderr, "ulimit -n") || !strings.Contains(stderr, "RLIMIT_NOFILE") {
				t.Fatalf("exit %d, %q: want 2 and the limit", code, stderr)
			}
		})
	}
}
