package metrics

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/result"
)

// TestBreakdownAndChecks feeds two intents with known latencies, a failure
// and answer checks, and checks every per-label figure and sTPS.
func TestBreakdownAndChecks(t *testing.T) {
	rc := New(Config{Start: t0, Mode: "open", TargetRate: 10, SLO: SLO{TTFT: 150 * time.Millisecond}})
	var recs []*record.Record
	// 10 requests over 1 s (sent at 0, 0.1, ... 0.9 s): even ones "faq"
	// with TTFT 100 ms, odd ones "compare" with TTFT 200 ms; each 5 tokens
	// 10 ms apart; the last one of each also labelled turn=2.
	for i := 0; i < 10; i++ {
		intent, ttft := "faq", 100*time.Millisecond
		if i%2 == 1 {
			intent, ttft = "compare", 200*time.Millisecond
		}
		r := mk(uint64(i), time.Duration(i)*100*time.Millisecond, 0, ttft, 10*time.Millisecond, 5)
		r.Intent = intent
		turn := "1"
		if i >= 8 {
			turn = "2"
		}
		r.Labels = append(r.Labels, record.Label{Key: "turn", Value: turn})
		// faq answers pass their one check; compare answers pass one of two.
		r.Checks = append(r.Checks, record.CheckResult{Name: "contains", Pass: true})
		if intent == "compare" {
			r.Checks = append(r.Checks, record.CheckResult{Name: "rouge_l", Pass: i%4 == 1})
		}
		recs = append(recs, r)
	}
	failed := mk(10, 950*time.Millisecond, 0, 0, 0, 1)
	failed.FirstToken, failed.Gaps = time.Time{}, nil
	failed.Intent = "faq"
	failed.Fail(record.HTTPStatus(500), "boom", failed.Sent.Add(5*time.Millisecond))
	// A success with no checks (intent "plain", ending within the window):
	// a task done for the seed's sTPS, not for the checked one.
	plain := mk(11, 500*time.Millisecond, 0, 100*time.Millisecond, 10*time.Millisecond, 2)
	plain.Intent = "plain"
	recs = append(recs, failed, plain)
	feed(rc, recs...)
	sc, _, err := rc.Scenario("s", t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// The window runs from the first send (0 s) to the last end: request 9
	// sent at 0.9 s, TTFT 200 ms, 4 gaps of 10 ms → 1.14 s.
	window := 1.14
	faq, cmp := sc.Breakdown["intent"]["faq"], sc.Breakdown["intent"]["compare"]
	if faq.Requests.Total != 6 || faq.Requests.Succeeded != 5 || faq.Requests.Failed != 1 || faq.Requests.Errors["http_500"] != 1 {
		t.Errorf("faq requests %+v", faq.Requests)
	}
	if cmp.Requests.Total != 5 || cmp.Requests.Succeeded != 5 {
		t.Errorf("compare requests %+v", cmp.Requests)
	}
	approx(t, "faq ttft p50", faq.Metrics["ttft_ms"].P50, 100, 1)
	approx(t, "compare ttft p50", cmp.Metrics["ttft_ms"].P50, 200, 2)
	approx(t, "compare e2e p99", cmp.Metrics["e2e_ms"].P99, 240, 2.4)
	approx(t, "faq itl p50", faq.Metrics["itl_ms"].P50, 10, 0.1)
	approx(t, "faq tpot p50", faq.Metrics["tpot_ms"].P50, 10, 0.1)
	approx(t, "faq rps", faq.Throughput.RequestsPerS, 5/window, 1e-9)
	approx(t, "faq output tps", faq.Throughput.OutputTokensPerS, 25/window, 1e-9)
	// Goodput under TTFT ≤ 150 ms: faq 5 of 6, compare 0 of 5.
	approx(t, "faq goodput", faq.Goodput.Fraction, 5.0/6, 1e-12)
	approx(t, "compare goodput", cmp.Goodput.Fraction, 0, 0)
	if turn2 := sc.Breakdown["turn"]["2"]; turn2.Requests.Total != 2 {
		t.Errorf("turn 2 has %d requests, want 2", turn2.Requests.Total)
	}
	// Checks: faq 5/5 pass; compare passes when i%4 == 1 (i = 1, 5, 9): 3/5.
	if faq.Checks == nil || faq.Checks.Checked != 5 || faq.Checks.Passed != 5 {
		t.Errorf("faq checks %+v", faq.Checks)
	}
	if cmp.Checks == nil || cmp.Checks.Checked != 5 || cmp.Checks.Passed != 3 {
		t.Errorf("compare checks %+v", cmp.Checks)
	}
	c := sc.Checks
	if c == nil || c.Checked != 10 || c.Passed != 8 || c.ByCheck["rouge_l"].Evaluated != 5 || c.ByCheck["rouge_l"].Passed != 3 || c.ByCheck["contains"].Passed != 10 {
		t.Fatalf("checks %+v", c)
	}
	approx(t, "pass rate", c.PassRate, 0.8, 1e-12)
	// Checked sTPS: the 8 that passed their checks. The seed's sTPS: those
	// 8 and the success without checks; not the 2 that failed a check.
	approx(t, "checked sTPS", c.STPSChecked, 8/window, 1e-9)
	approx(t, "sTPS", sc.Throughput.STPS, 9/window, 1e-9)
	approx(t, "plain sTPS", sc.Breakdown["intent"]["plain"].Throughput.STPS, 1/window, 1e-9)
	approx(t, "compare sTPS", cmp.Throughput.STPS, 3/window, 1e-9)
	if v, ok := Lookup(&sc, nil, "", 0, "stps_checked"); !ok || v != c.STPSChecked {
		t.Errorf("Lookup(stps_checked) = %v %v", v, ok)
	}
	if v, ok := Lookup(&sc, nil, "", 0, "stps"); !ok || v != sc.Throughput.STPS {
		t.Errorf("Lookup(stps) = %v %v", v, ok)
	}
	// Without any checks, sTPS is the successes' rate and the checked
	// variant has no value (a threshold on it cannot judge).
	bare := New(Config{Start: t0, Mode: "closed"})
	feed(bare, mk(0, 0, 0, 10*time.Millisecond, time.Millisecond, 2), mk(1, 0, 0, 10*time.Millisecond, time.Millisecond, 2))
	bsc, _, _ := bare.Scenario("b", t0.Add(time.Second))
	if v, _ := Lookup(&bsc, nil, "", 0, "stps"); v != bsc.Throughput.RequestsPerS || v <= 0 {
		t.Errorf("sTPS without checks = %v, want the request rate %v", v, bsc.Throughput.RequestsPerS)
	}
	if v, ok := Lookup(&bsc, nil, "", 0, "stps_checked"); !ok || !math.IsNaN(v) {
		t.Errorf("stps_checked without checks = %v %v, want NaN", v, ok)
	}
}

func TestBreakdownCapsValues(t *testing.T) {
	rc := New(Config{Start: t0, Mode: "closed"})
	for i := 0; i < MaxLabelValues+10; i++ {
		r := mk(uint64(i), 0, 0, 10*time.Millisecond, time.Millisecond, 2)
		r.Intent = fmt.Sprint("i", i)
		feed(rc, r)
	}
	sc, _, _ := rc.Scenario("s", t0.Add(time.Second))
	if n := len(sc.Breakdown["intent"]); n != MaxLabelValues+1 {
		t.Fatalf("%d intent groups, want %d and (other)", n, MaxLabelValues)
	}
	if o := sc.Breakdown["intent"][OtherLabel]; o.Requests.Total != 10 {
		t.Fatalf("(other) has %d requests, want 10", o.Requests.Total)
	}
}

// TestSecondSeries checks the per-second E2E figures.
func TestSecondSeries(t *testing.T) {
	rc := New(Config{Start: t0, Mode: "closed"})
	// Second 0: E2E 100 ms ×3 ; second 1: E2E 300 ms ×1.
	for i := 0; i < 3; i++ {
		feed(rc, mk(uint64(i), time.Duration(i)*10*time.Millisecond, 0, 60*time.Millisecond, 10*time.Millisecond, 5))
	}
	feed(rc, mk(3, 1200*time.Millisecond, 0, 260*time.Millisecond, 10*time.Millisecond, 5))
	sc, _, _ := rc.Scenario("s", t0.Add(2*time.Second))
	s := sc.Series
	approx(t, "e2e p50 s0", s.E2Ep50ms[0], 100, 1)
	approx(t, "e2e mean s0", s.E2EMeanMS[0], 100, 1)
	approx(t, "e2e p99 s1", s.E2Ep99ms[1], 300, 3)
	approx(t, "ttft mean s1", s.TTFTMeanMS[1], 260, 3)
}

// TestNormalisedTokensAndComplexity checks normalised throughput adds
// output tokens to the weighted input, and the complexity distribution.
func TestNormalisedTokensAndComplexity(t *testing.T) {
	rc := New(Config{Start: t0, Mode: "closed"})
	for i := 0; i < 4; i++ {
		r := mk(uint64(i), time.Duration(i)*250*time.Millisecond, 0, 50*time.Millisecond, 10*time.Millisecond, 6)
		r.NormInput = 100 + 256 // 100 text tokens and one 512² image patch at 256
		r.Complexity = float64(20 * (i + 1))
		feed(rc, r)
	}
	sc, _, _ := rc.Scenario("s", t0.Add(2*time.Second))
	// Window: first send 0 s to last end 0.75 + 0.05 + 5 × 0.01 = 0.85 s.
	approx(t, "normalised tokens/s", sc.Throughput.NormalizedTokensPerS, (4*356+4*6)/0.85, 1e-6)
	c := sc.Metrics[Complexity]
	if c.Count != 4 || c.Min != 20 || c.Max != 80 || c.Mean != 50 {
		t.Fatalf("complexity %+v", c)
	}
}

// TestLookupFeatureScalars checks the thresholds on recall and probe rates
// read their sections, and are NaN (no value) where a stage had none.
func TestLookupFeatureScalars(t *testing.T) {
	sc := &result.Scenario{
		Vector: &result.Vector{Recall: result.Recall{Count: 100, Mean: 0.97, P5: 0.8}},
		Probes: &result.Probes{Overall: result.ProbeFigures{
			AttackSuccess: &result.ProbeRate{K: 3, N: 60}, Leak: &result.ProbeRate{K: 0, N: 20},
			FalseRefusal: &result.ProbeRate{K: 1, N: 40}, Interception: &result.ProbeRate{K: 57, N: 60},
		}},
	}
	for metric, want := range map[string]float64{"recall": 0.97, "recall_p5": 0.8, "attack_success_rate": 0.05,
		"leak_rate": 0, "false_refusal_rate": 0.025, "interception_rate": 0.95} {
		if v, ok := Lookup(sc, nil, "", 0, metric); !ok || v != want {
			t.Errorf("%s = %v (%v), want %v", metric, v, ok, want)
		}
	}
	for _, metric := range []string{"recall", "attack_success_rate"} {
		if v, ok := Lookup(&result.Scenario{}, nil, "", 0, metric); !ok || !math.IsNaN(v) {
			t.Errorf("%s without the section = %v, want NaN", metric, v)
		}
	}
}

// TestNormalisedTokensNeedEveryRequest checks normalised throughput is left
// out when some successful request's normalised input is unknown.
func TestNormalisedTokensNeedEveryRequest(t *testing.T) {
	rc := New(Config{Start: t0, Mode: "closed"})
	known := mk(0, 0, 0, 50*time.Millisecond, 10*time.Millisecond, 6)
	known.NormInput = 356
	feed(rc, known, mk(1, 100*time.Millisecond, 0, 50*time.Millisecond, 10*time.Millisecond, 6))
	sc, _, _ := rc.Scenario("s", t0.Add(time.Second))
	if sc.Throughput.NormalizedTokensPerS != 0 {
		t.Fatalf("normalised tokens/s %v with one request unweighed, want none", sc.Throughput.NormalizedTokensPerS)
	}
}
