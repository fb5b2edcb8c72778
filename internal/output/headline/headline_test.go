package headline

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spate-dev/spate/llmtest"
	"github.com/spate-dev/spate/result"
)

// stage is an open-loop stage at rate whose goodput is good, whose
// server kept up with it.
func stage(name string, rate, good float64, valid bool) result.Scenario {
	sc := result.Scenario{
		Name:     name,
		Load:     result.Load{Mode: "open", TargetRate: rate, AchievedRate: rate, Valid: valid},
		Requests: result.Requests{Total: 100, Succeeded: 100},
		Goodput:  result.Goodput{Fraction: good, SLOms: map[string]float64{"ttft": 500, "tpot": 50}},
	}
	llmtest.KeptUp(&sc, 6)
	return sc
}

// ramp is a run of rising load whose knee is rate-4.
func ramp() *result.Result {
	return &result.Result{Scenarios: []result.Scenario{
		stage("rate-2", 2, 0.99, true), stage("rate-4", 4, 0.95, true), stage("rate-8", 8, 0.5, true)}}
}

// capacityResult is a capacity search that found 20 req/s in [18, 22].
func capacityResult() *result.Result {
	r := &result.Result{Scenarios: []result.Scenario{
		stage("trial-1", 10, 1, true), stage("trial-2", 20, 0.95, true), stage("trial-3", 24, 0.6, true), stage("trial-4", 20, 0.93, true)}}
	r.Capacity = &result.Capacity{Method: "adaptive", GoodputTarget: 0.9, SLOms: map[string]float64{"ttft": 2000},
		RateRPS: 20, Confidence: 0.95, RateTrials: [2]int{2, 2}, LowRPS: 20, HighRPS: 24,
		Interval: &result.CapacityInterval{LowRPS: 18, HighRPS: 22, EstimateRPS: 20.4, Confidence: 0.95},
		Trials: []result.CapacityTrial{{Scenario: "trial-1", RateRPS: 10, Pass: true}, {Scenario: "trial-2", RateRPS: 20, Pass: true},
			{Scenario: "trial-3", RateRPS: 24}, {Scenario: "trial-4", RateRPS: 20, Pass: true, Confirm: true}}}
	return r
}

func TestOf(t *testing.T) {
	noKnee := ramp()
	for i := range noKnee.Scenarios {
		noKnee.Scenarios[i].Goodput.Fraction = 0.5
	}
	single := ramp()
	single.Scenarios = single.Scenarios[:1]
	flat := ramp()
	flat.Scenarios[1].Load.TargetRate = 2 // not rising: a baseline twice
	interrupted := capacityResult()
	interrupted.Capacity.Interrupted = "signal"
	for _, c := range []struct {
		name    string
		r       *result.Result
		ok      bool
		title   string
		meaning string
		marked  []int
	}{
		{"knee", ramp(), true, "Knee: 4.0 req/s offered (stage rate-4)",
			"rate-4, 4.0 req/s offered, is the most load the server sustained: it kept up with what it was sent and kept 90 % of requests within the SLO (tpot ≤ 50 ms, ttft ≤ 500 ms) on a valid measurement (rate-8: goodput 50 %)", []int{1}},
		{"no knee", noKnee, true, "Knee: none",
			"no stage was sustained with 90 % of requests within the SLO (tpot ≤ 50 ms, ttft ≤ 500 ms) on a valid measurement (rate-2: goodput 50 %; rate-4: goodput 50 %; rate-8: goodput 50 %)", nil},
		{"capacity", capacityResult(), true, "Capacity: 20 req/s, 95 % CI [18, 22]",
			"20 req/s is the most load that kept 90 % of requests within the SLO (ttft ≤ 2000 ms), decided at 95 % confidence (2 of 2 trials passed); " +
				"the 95 % confidence interval of the capacity is [18, 22] req/s, estimate 20.4", []int{1, 3}},
		{"capacity interrupted", interrupted, true, "Capacity: none (interrupted)",
			"the search was interrupted (signal) before it found the most load that kept 90 % of requests within the SLO (ttft ≤ 2000 ms)", nil},
		{"single stage", single, false, "", "", nil},
		{"not rising", flat, false, "", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, ok := Of(c.r, MinGoodput)
			if ok != c.ok {
				t.Fatalf("headline %v, want %v", ok, c.ok)
			}
			if !ok {
				return
			}
			if h.Title() != c.title || h.Meaning != c.meaning || !reflect.DeepEqual(h.Marked, c.marked) {
				t.Errorf("got %q / %q / %v\nwant %q / %q / %v", h.Title(), h.Meaning, h.Marked, c.title, c.meaning, c.marked)
			}
			if s := h.Sentence(); !strings.HasPrefix(s, c.meaning+".") || strings.Contains(s, "marked") != (len(c.marked) > 0) {
				t.Errorf("sentence %q", s)
			}
		})
	}
}

// TestKneeNotes: every stage above the knee is named with why it is not
// the knee: one that met the SLO on an invalid measurement, one whose
// measurement error straddles the target, one the server fell behind.
func TestKneeNotes(t *testing.T) {
	r := ramp()
	r.Scenarios[2].Goodput.Fraction = 0.97
	r.Scenarios[2].Load.Valid = false
	r.Scenarios = append(r.Scenarios, stage("rate-16", 16, 0.91, true))
	r.Scenarios[3].MeasurementError = &result.MeasurementError{Goodput: result.Range{Low: 0.85, High: 0.91}}
	r.Scenarios[2].Load.InvalidCause = "missed_sends"
	behind := stage("rate-32", 32, 1, true)
	for i := range behind.Series.CompletedPerS {
		behind.Series.CompletedPerS[i] = 20 // of 32 sent
	}
	r.Scenarios = append(r.Scenarios, behind)
	h := Knee(r.Scenarios, MinGoodput)
	want := "rate-4, 4.0 req/s offered, is the most load the server sustained: it kept up with what it was sent and kept 90 % of requests within the SLO (tpot ≤ 50 ms, ttft ≤ 500 ms) on a valid measurement" +
		" (rate-8: the measurement was invalid (missed_sends); rate-16: cannot tell: responses read late put goodput in [85.0 %, 91.0 %]; rate-32: fell behind, completed 62 % of what was sent)"
	if h.Meaning != want {
		t.Errorf("meaning\n%s\nwant\n%s", h.Meaning, want)
	}
}

func TestRising(t *testing.T) {
	closed := func(n int) result.Scenario {
		return result.Scenario{Load: result.Load{Mode: "closed", Concurrency: n}}
	}
	replay := result.Scenario{Load: result.Load{Mode: "open", Arrival: "trace"}}
	for _, c := range []struct {
		name string
		scs  []result.Scenario
		want bool
	}{
		{"rates", ramp().Scenarios, true},
		{"concurrency", []result.Scenario{closed(1), closed(4)}, true},
		{"one stage", ramp().Scenarios[:1], false},
		{"falling", []result.Scenario{stage("a", 8, 1, true), stage("b", 4, 1, true)}, false},
		{"mixed kinds", []result.Scenario{stage("a", 2, 1, true), closed(4)}, false},
		{"a replay", []result.Scenario{stage("a", 2, 1, true), replay}, false},
	} {
		if got := Rising(c.scs); got != c.want {
			t.Errorf("%s: Rising %v, want %v", c.name, got, c.want)
		}
	}
}
