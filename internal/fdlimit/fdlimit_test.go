package fdlimit

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	l := Limit{Soft: 4096, Hard: 8192}
	for _, tc := range []struct {
		name string
		l    Limit
		n    int
		err  string // "": none
	}{
		{"well under", l, 100, ""},
		{"the limit less the margin", l, 4096 - Margin, ""},
		{"one more", l, 4096 - Margin + 1, "--concurrency 3841 needs a file descriptor a request in flight, but this process may open 4096 (RLIMIT_NOFILE, hard limit 8192), 256 of them kept for its own files: use at most 3840, or raise the limit with ulimit -n"},
		{"ten million", l, 10_000_000, "use at most 3840"},
		{"a limit under the margin", Limit{Soft: 100, Hard: 100}, 1, "use at most 0"},
		{"no limit known", Limit{}, 10_000_000, ""},
		{"nothing in flight", l, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.l.Check("--concurrency", tc.n)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one with %q", err, tc.err)
			}
		})
	}
}

// TestCurrent: the limit is known on the machines spate runs on, and
// positive.
func TestCurrent(t *testing.T) {
	l, ok := Current()
	if !ok {
		t.Skip("no RLIMIT_NOFILE here")
	}
	if l.Soft == 0 || l.Hard < l.Soft {
		t.Fatalf("limit %+v", l)
	}
	t.Logf("RLIMIT_NOFILE %+v", l)
}
