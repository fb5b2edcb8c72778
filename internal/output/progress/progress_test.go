package progress

import (
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/runner"
)

// updates is a run of two stages as the runner would report it.
func updates(f runner.ProgressFunc) {
	open := runner.Stage{Name: "rate-8", Rate: 8, Duration: 10 * time.Second}
	f(open, time.Second, 9*time.Second, metrics.Progress{Sent: 8, Completed: 0, InFlight: 8})
	f(open, 2*time.Second, 8*time.Second, metrics.Progress{Sent: 16, Completed: 6, InFlight: 10, OutputTokens: 384, TTFTp50ms: 64.4, TTFTp99ms: 170.2})
	f(open, 4*time.Second, 6*time.Second, metrics.Progress{Sent: 32, Completed: 20, Failed: 1, InFlight: 12, OutputTokens: 1280, TTFTp50ms: 8.25, TTFTp99ms: 1234})
	f(open, 11*time.Second, 0, metrics.Progress{Sent: 80, Completed: 78, Failed: 1, InFlight: 2, OutputTokens: 4992, TTFTp50ms: 60, TTFTp99ms: 150})
	closed := runner.Stage{Name: "closed", Concurrency: 4, Requests: 100}
	f(closed, 3*time.Second, 0, metrics.Progress{Sent: 40, Completed: 36, InFlight: 4, OutputTokens: 2304, TTFTp50ms: 50, TTFTp99ms: 90})
	f(closed, 3725*time.Second, 0, metrics.Progress{Sent: 100, Completed: 100, InFlight: 0, OutputTokens: 6400, TTFTp50ms: 50, TTFTp99ms: 90})
}

func TestBlockGolden(t *testing.T) {
	var b bytes.Buffer
	updates(NewBlock(&b).Update)
	golden.Check(t, "block.golden", b.Bytes())
	// Within a stage the block moves back over its 4 lines; a new stage
	// starts a block below the last.
	if n := strings.Count(b.String(), "\x1b[4A"); n != 4 {
		t.Errorf("%d moves up, want 4 (3 in the first stage, 1 in the second)", n)
	}
}

func TestPlainLinesGolden(t *testing.T) {
	var b bytes.Buffer
	updates(For(&b, false))
	golden.Check(t, "lines.golden", b.Bytes())
	if strings.Contains(b.String(), "\x1b") {
		t.Error("plain lines carry escape sequences")
	}
}

func TestRenderFigures(t *testing.T) {
	st := runner.Stage{Name: "s", Rate: 8, Duration: 10 * time.Second}
	got := Render(st, 4*time.Second, 6*time.Second, metrics.Progress{Sent: 32, Completed: 20, Failed: 1, InFlight: 12, OutputTokens: 1280, TTFTp50ms: 64, TTFTp99ms: 170})
	want := []string{
		"stage s  [█████████···············]  0:04 elapsed · 0:06 left",
		"  rate    sent 8.0/s (offered 8/s)  completed 5.0/s  in flight 12",
		"  TTFT    p50 64 ms  p99 170 ms (last second)",
		"  output  320 tok/s  errors 1 (5.0 %)  sent 32  done 20",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestInteractive(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, c := range []struct {
		tty  bool
		env  map[string]string
		want bool
	}{
		{true, map[string]string{"TERM": "xterm"}, true},
		{false, map[string]string{"TERM": "xterm"}, false},
		{true, map[string]string{"TERM": "xterm", "CI": "true"}, false},
		{true, map[string]string{"TERM": "dumb"}, false},
	} {
		if got := Interactive(c.tty, env(c.env)); got != c.want {
			t.Errorf("tty %v env %v: %v, want %v", c.tty, c.env, got, c.want)
		}
	}
}
