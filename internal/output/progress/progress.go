// Package progress shows a run's progress on a terminal: one block per
// stage, redrawn in place with ANSI escapes, with elapsed and remaining
// time, sent and offered against completed rate, requests in flight, TTFT p50/p99 of
// the last second, output tokens per second and errors. Where the output is
// not an interactive terminal it falls back to plain periodic lines.
//
// Stage: outputs (while the run goes on).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/runner"
)

// ANSI control sequences: cursor up n lines, and erase the whole line.
const (
	cursorUp  = "\x1b[%dA"
	eraseLine = "\x1b[2K"
)

// barWidth is the width of the progress bar in cells.
const barWidth = 24

// Block draws progress as one block of lines, redrawn in place. Each
// stage gets its own block; the finished stages' blocks stay on screen.
type Block struct {
	mu    sync.Mutex
	w     io.Writer
	stage string
	lines int // lines of the block drawn last, to move back over
}

// NewBlock returns a Block that draws on w, an interactive terminal.
func NewBlock(w io.Writer) *Block { return &Block{w: w} }

// Update redraws the block; it has the signature of runner.ProgressFunc.
func (b *Block) Update(st runner.Stage, elapsed, remaining time.Duration, pr metrics.Progress) {
	text := Render(st, elapsed, remaining, pr)
	b.mu.Lock()
	defer b.mu.Unlock()
	var out strings.Builder
	if st.Name == b.stage && b.lines > 0 {
		fmt.Fprintf(&out, cursorUp, b.lines)
	}
	b.stage = st.Name
	b.lines = 0
	for _, l := range text {
		out.WriteString("\r" + eraseLine + l + "\n")
		b.lines++
	}
	_, _ = io.WriteString(b.w, out.String())
}

// Render returns the lines of a progress block.
func Render(st runner.Stage, elapsed, remaining time.Duration, pr metrics.Progress) []string {
	sec := elapsed.Seconds()
	rate := func(n float64) float64 {
		if sec <= 0 {
			return 0
		}
		return n / sec
	}
	head := fmt.Sprintf("stage %s  %s  %s elapsed", st.Name, bar(st, elapsed), clock(elapsed))
	switch {
	case remaining > 0:
		head += fmt.Sprintf(" · %s left", clock(remaining))
	case st.Duration > 0:
		head += " · sending done, draining"
	case st.Requests > 0:
		head += fmt.Sprintf(" · %d of %d requests sent", pr.Sent, st.Requests)
	}
	// Sent is over the sending time: a stage that drains after its
	// duration sends nothing more.
	sent := rate(float64(pr.Sent))
	if send := st.Warmup + st.Duration; st.Duration > 0 && elapsed > send {
		sent = float64(pr.Sent) / send.Seconds()
	}
	load := fmt.Sprintf("  rate    sent %.1f/s", sent)
	switch {
	case st.Concurrency > 0:
		load += fmt.Sprintf(" (closed loop, %d workers)", st.Concurrency)
	case st.Rate > 0:
		load += fmt.Sprintf(" (offered %.4g/s)", st.Rate)
	case st.TokenRate > 0:
		load += fmt.Sprintf(" (offered %.4g tokens/s)", st.TokenRate)
	}
	load += fmt.Sprintf("  completed %.1f/s  in flight %d", rate(float64(pr.Completed)), pr.InFlight)
	ttft := "  TTFT    -"
	if pr.TTFTp50ms > 0 {
		ttft = fmt.Sprintf("  TTFT    p50 %s  p99 %s (last second)", ms(pr.TTFTp50ms), ms(pr.TTFTp99ms))
	}
	errPct := 0.0
	if pr.Completed > 0 {
		errPct = 100 * float64(pr.Failed) / float64(pr.Completed)
	}
	tail := fmt.Sprintf("  output  %.0f tok/s  errors %d (%.1f %%)  sent %d  done %d",
		rate(float64(pr.OutputTokens)), pr.Failed, errPct, pr.Sent, pr.Completed)
	return []string{head, load, ttft, tail}
}

// bar draws the share of the stage's sending time (warm-up and duration)
// gone; an empty frame when the stage ends by a request count.
func bar(st runner.Stage, elapsed time.Duration) string {
	total := st.Warmup + st.Duration
	if st.Duration <= 0 || total <= 0 {
		return "[" + strings.Repeat("·", barWidth) + "]"
	}
	n := int(float64(barWidth) * float64(elapsed) / float64(total))
	n = min(max(n, 0), barWidth)
	return "[" + strings.Repeat("█", n) + strings.Repeat("·", barWidth-n) + "]"
}

// clock formats a duration as m:ss (h:mm:ss past an hour).
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

func ms(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// Interactive reports whether progress should be drawn in place: the
// output is a terminal, CI is not set and TERM is not "dumb". getenv
// reads the environment (os.Getenv).
func Interactive(isTerminal bool, getenv func(string) string) bool {
	return isTerminal && getenv("CI") == "" && getenv("TERM") != "dumb"
}

// For returns the progress display for w: a Block redrawn in place when
// interactive, else plain periodic lines (runner.ProgressLines).
func For(w io.Writer, interactive bool) runner.ProgressFunc {
	if interactive {
		return NewBlock(w).Update
	}
	return runner.ProgressLines(w)
}
