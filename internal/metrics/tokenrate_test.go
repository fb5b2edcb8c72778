package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
)

// TestTokenRateFigures feeds a token-paced schedule: requests of 100, 300,
// 100, 300 tokens sent 0.1, 0.3, 0.1 s apart (tokens / 1000 tokens/s), plus
// a warm-up request and a conversation's later turn, which do not count.
func TestTokenRateFigures(t *testing.T) {
	rc := New(Config{Start: t0, Mode: "open", Arrival: "constant", TargetTokenRate: 1000})
	var recs []*record.Record
	off := time.Duration(0)
	for i, tok := range []float64{100, 300, 100, 300} {
		r := mk(uint64(i), off, 0, 10*time.Millisecond, time.Millisecond, 2)
		r.PacedTokens = tok
		recs = append(recs, r)
		off += time.Duration(tok) * time.Millisecond
	}
	warm := mk(9, 0, 0, time.Millisecond, time.Millisecond, 2)
	warm.Warmup, warm.PacedTokens = true, 5000
	later := mk(3, 2*time.Second, 0, time.Millisecond, time.Millisecond, 2) // a later turn: PacedTokens 0
	feed(rc, append(recs, warm, later)...)
	sc, _, _ := rc.Scenario("s", t0.Add(3*time.Second))
	l := sc.Load
	if l.TargetTokenRate != 1000 || l.TokenRateBasis != "total" {
		t.Fatalf("load %+v", l)
	}
	// 100 + 300 + 100 tokens over the 0.5 s from the first send to the last.
	approx(t, "achieved token rate", l.AchievedTokenRate, 1000, 1e-9)
	// Served, measured: each answer was 100 prompt tokens and 2 output
	// tokens by usage, not the tokens pacing expected: 3 × 102 over 0.5 s.
	approx(t, "served token rate", l.ServedTokenRate, 612, 1e-9)
	if l.ServedTokenSource != "usage" {
		t.Errorf("served token source %q, want usage", l.ServedTokenSource)
	}
	for _, w := range sc.Warnings {
		if strings.Contains(w, "spreads") {
			t.Errorf("a constant schedule warned of spread: %s", w)
		}
	}

	// A Poisson schedule of 4 requests: its offered rate spreads by
	// 1.96·√(Σtok²)/Σtok = 1.96·√200000/800 ≈ 110 %.
	rc = New(Config{Start: t0, Mode: "open", Arrival: "poisson", TargetTokenRate: 1000, OutputBasis: true, GapCV: 1})
	feed(rc, recs...)
	sc, _, _ = rc.Scenario("s", t0.Add(3*time.Second))
	if sc.Load.TokenRateBasis != "output" || !strings.Contains(strings.Join(sc.Warnings, "\n"), "spreads by about ±110 %") {
		t.Errorf("basis %q warnings %q", sc.Load.TokenRateBasis, sc.Warnings)
	}
	approx(t, "served output token rate", sc.Load.ServedTokenRate, 12, 1e-9)

	// A success whose output had no count: served is not measured.
	recs[1].OutputSource = record.TokensNone
	rc = New(Config{Start: t0, Mode: "open", Arrival: "constant", TargetTokenRate: 1000})
	feed(rc, recs...)
	if sc, _, _ = rc.Scenario("s", t0.Add(3*time.Second)); sc.Load.ServedTokenRate != 0 || sc.Load.ServedTokenSource != "" {
		t.Errorf("served %v from %q with an uncounted answer, want none", sc.Load.ServedTokenRate, sc.Load.ServedTokenSource)
	}
}
