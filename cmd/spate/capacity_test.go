package main

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/longtest"
	"github.com/spate-dev/spate/internal/verdict/capacity"
	"github.com/spate-dev/spate/result"
)

// slotServer is a plain HTTP server that serves at most slots requests
// at once, each for hold; the rest wait their turn. Its capacity is
// slots/hold requests a second.
func slotServer(t *testing.T, slots int, hold time.Duration) string {
	t.Helper()
	sem := make(chan struct{}, slots)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case sem <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		defer func() { <-sem }()
		select {
		case <-time.After(hold):
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestCapacityCommand runs spate capacity against a server of known
// capacity (4 slots of 200 ms: 20 req/s) with 3 s trials: 16 req/s
// passes, completing 16 a second; 24 req/s fails, the server completing
// its 20 a second (not the 24 sent): the bracket is [16, 24), each end
// decided by three trials that agree (--confirm 0 asks for no more than
// the decision needs). Trials of 1 s cannot tell: exit 4, the last line
// saying why. (The searches that find the capacity itself run with the
// integration tag: capacity_integration_test.go.)
func TestCapacityCommand(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() {
		t.Skip("sends load for 20 s")
	}
	ctx := context.Background()
	target := slotServer(t, 4, 200*time.Millisecond)
	out := filepath.Join(t.TempDir(), "capacity.json")
	args := []string{"capacity", "--target", target, "--api", "http", "--arrival", "constant", "--lag-bound", "100ms",
		"--min-rate", "16", "--max-rate", "24", "--resolution", "0.4", "--trial-duration", "3s", "--confirm", "0", "--out", out}
	code, stdout, stderr := cli(t, ctx, args...)
	t.Logf("spate capacity:\n%s", stdout)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := readResult(t, out)
	c := r.Capacity
	if r.Verdict != "pass" {
		t.Errorf("verdict %q, want pass", r.Verdict)
	}
	// A trial the generator could not send on schedule (a busy machine)
	// is run again: the judged trials are the last at each rate.
	judged := map[float64]result.CapacityTrial{}
	for _, tr := range c.Trials {
		judged[tr.RateRPS] = tr
	}
	if c.LowRPS != 16 || c.HighRPS != 24 || len(judged) != 2 || c.RateTrials != [2]int{3, 3} || c.Confidence != 0.95 {
		t.Fatalf("capacity %+v", c)
	}
	if iv := c.Interval; iv == nil || iv.LowRPS >= 20 || iv.HighRPS <= 20 {
		t.Errorf("interval %+v, want one holding 20 req/s", iv)
	}
	ok, over := judged[16], judged[24]
	if !ok.Pass || math.Abs(ok.CompletedRPS-16) > 1.5 {
		t.Errorf("16 req/s: %+v, want a pass completing ≈ 16 a second", ok)
	}
	// 40 of 48 completed in 2 steady seconds is surely under 95 %, by
	// little: when the noise leaves it in doubt, the queue that grew by 8
	// fails it.
	if over.Pass || (over.Reason != capacity.ReasonUnderdelivery && over.Reason != capacity.ReasonQueueGrowing) || math.Abs(over.CompletedRPS-20) > 2 {
		t.Errorf("24 req/s: %+v, want underdelivered or queue_growing, completing ≈ 20 a second", over)
	}
	if !strings.Contains(stdout, "decided at 95 % confidence over 3 trials (3 passed)") || !strings.Contains(stdout, "search bracket: [16, 24)") {
		t.Errorf("summary:\n%s", stdout)
	}
	// Too short to tell: inconclusive, exit 4, the last line says why.
	args = []string{"capacity", "--target", target, "--api", "http", "--arrival", "constant", "--lag-bound", "100ms",
		"--min-rate", "16", "--trial-duration", "1s", "--out", out}
	code, stdout, _ = cli(t, ctx, args...)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != exitInvalid || !strings.HasPrefix(lines[len(lines)-1], "inconclusive: trial 1 at 16rps cannot tell") {
		t.Errorf("1 s trials: exit %d\n%s", code, stdout)
	}
	if r := readResult(t, out); r.Capacity.Inconclusive == "" || r.Capacity.Trials[len(r.Capacity.Trials)-1].Reason != capacity.ReasonTooShort || r.Verdict != "invalid" {
		// The file's verdict is the search's (it was its first trial's: pass).
		t.Errorf("1 s trials: verdict %q, %+v", r.Verdict, r.Capacity)
	}
}

func TestCapacityUsage(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{
		{"capacity", "--target", "http://127.0.0.1:1/v1", "--rate", "5"},
		{"capacity", "--target", "http://127.0.0.1:1/v1", "--method", "guess"},
		{"capacity", "--target", "http://127.0.0.1:1/v1", "--goodput", "1.5"},
		{"capacity", "--target", "http://127.0.0.1:1/v1", "--min-rate", "10", "--max-rate", "5"},
	} {
		if code, _, stderr := cli(t, ctx, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr)
		}
	}
}
