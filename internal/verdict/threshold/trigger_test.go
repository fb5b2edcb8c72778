package threshold

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseTrigger(t *testing.T) {
	tests := []struct {
		expr string
		want Trigger
	}{
		{"delta(p95(e2e)) > 300ms for 2m and error_rate >= 5%", Trigger{Hold: 2 * time.Minute, Conds: []Cond{
			{Threshold: Threshold{Agg: AggPercentile, Percentile: 95, Metric: "e2e", Op: ">", Value: 300}, Change: ChangeDelta},
			{Threshold: Threshold{Metric: "error_rate", Op: ">=", Value: 0.05}},
		}}},
		{"DELTA( p99(ttft) , first 20s ) >= 1s AND rel(mean(tpot), previous) > 50% FOR 30s", Trigger{Hold: 30 * time.Second, Conds: []Cond{
			{Threshold: Threshold{Agg: AggPercentile, Percentile: 99, Metric: "ttft", Op: ">=", Value: 1000}, Change: ChangeDelta, Baseline: Baseline{First: 20 * time.Second}},
			{Threshold: Threshold{Agg: AggMean, Metric: "tpot", Op: ">", Value: 0.5}, Change: ChangeRel, Baseline: Baseline{Previous: true}},
		}}},
		{"rel(p95(e2e)){stage:peak} > 1.5", Trigger{Stage: "peak", Conds: []Cond{
			{Threshold: Threshold{Agg: AggPercentile, Percentile: 95, Metric: "e2e", Stage: "peak", Op: ">", Value: 1.5}, Change: ChangeRel},
		}}},
		{"error_rate > 1% for 10s", Trigger{Hold: 10 * time.Second, Conds: []Cond{{Threshold: Threshold{Metric: "error_rate", Op: ">", Value: 0.01}}}}},
		{"delta(error_rate) >= 2%", Trigger{Conds: []Cond{{Threshold: Threshold{Metric: "error_rate", Op: ">=", Value: 0.02}, Change: ChangeDelta}}}},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			if !IsTrigger(tc.expr) {
				t.Fatal("IsTrigger = false")
			}
			got, err := ParseTrigger(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			got.Expr = ""
			for i := range got.Conds {
				got.Conds[i].Expr = ""
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			again, err := ParseTrigger(got.String())
			if err != nil {
				t.Fatalf("String() %q does not parse: %v", got.String(), err)
			}
			if again.String() != got.String() {
				t.Fatalf("String() not stable: %q then %q", got.String(), again.String())
			}
		})
	}
	for _, plain := range []string{"p99(ttft) < 800ms", "error_rate < 1%", "deltas < 1", "rps >= 10"} {
		if IsTrigger(plain) {
			t.Errorf("IsTrigger(%q) = true", plain)
		}
	}
}

func TestParseTriggerErrors(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{"delta(p95(e2e)) > 300ms for 2m and error_rate >= 5% for 1m", "more than once"},
		{"delta(p95(e2e)) > 300ms for soon", `"soon" after "for" is not a positive duration`},
		{"delta(p95(e2e) > 300ms", "unclosed"},
		{"delta(p95(e2e), last 5s) > 300ms", "write previous"},
		{"delta(p95(e2e), first 1.5s) > 300ms", "whole seconds"},
		{"delta(e2e) > 300ms", `"e2e" is a distribution`},
		{"delta(p95(e2e)) > 5%", "% does not apply"},
		{"rel(p95(e2e)) > 30ms", "a relative change is a fraction"},
		{"delta() > 1", "needs a subject"},
		{"error_rate > 1% and", "condition 2 is empty"},
		{"p99(ttft){stage:a} > 1s and p99(e2e){stage:b} > 2s", "a trigger watches one stage"},
		{"rel(p95(e2e)) 30%", "missing comparison"},
	} {
		_, err := ParseTrigger(tc.expr)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "trigger ") {
			t.Errorf("ParseTrigger(%q) = %v, want an error containing %q", tc.expr, err, tc.want)
		}
	}
}

// src is a Source of fixed values by metric.
type src map[string]float64

func (s src) Lookup(_ string, _ float64, metric string) (float64, bool) {
	v, ok := s[metric]
	return v, ok
}

// TestWatchFiresOncePerHold steps a trigger through a calm spell, a bad
// spell held long enough, a blip, and a second bad spell: it fires once
// per hold that lasts its for, never twice in one hold.
func TestWatchFiresOncePerHold(t *testing.T) {
	tr, err := ParseTrigger("delta(p95(e2e)) > 300ms for 3s and error_rate >= 5%")
	if err != nil {
		t.Fatal(err)
	}
	w := &Watch{Trigger: tr}
	base := []Source{src{"e2e": 100}, nil}
	calm, bad := src{"e2e": 150, "error_rate": 0.01}, src{"e2e": 500, "error_rate": 0.08}
	slowOnly := src{"e2e": 500, "error_rate": 0.01}
	var fired []int
	for s := 0; s <= 20; s++ {
		now := calm
		switch {
		case s >= 4 && s <= 10: // bad 4..10: holds from 4, fires at 7
			now = bad
		case s == 12: // slow but no errors: not all hold
			now = slowOnly
		case s >= 14 && s <= 16: // bad for 2 s only: does not fire
			now = bad
		case s >= 18: // bad from 18, fires at 21 (after the end)
			now = bad
		}
		if w.Step(time.Duration(s)*time.Second, now, base) {
			fired = append(fired, s)
		}
	}
	if !reflect.DeepEqual(fired, []int{7}) || w.Fired() != 1 {
		t.Fatalf("fired at %v (%d), want once at 7 s", fired, w.Fired())
	}
	o := w.Outcome()
	if o.Pass || !o.Trigger || o.Fired != 1 || o.FiredAtS == nil || *o.FiredAtS != 7 || o.Value != 400 || o.Err != "" {
		t.Fatalf("outcome %+v", o)
	}
	// A second hold long enough fires again: two firings.
	for s := 21; s <= 30; s++ {
		w.Step(time.Duration(s)*time.Second, bad, base)
	}
	if w.Fired() != 2 {
		t.Fatalf("fired %d times, want 2", w.Fired())
	}
}

func TestWatchOutcomes(t *testing.T) {
	tr, _ := ParseTrigger("delta(p95(e2e)) > 300ms for 5s")
	// Calm for 10 s: passes, with the last delta as its value.
	w := &Watch{Trigger: tr}
	for s := 0; s <= 10; s++ {
		w.Step(time.Duration(s)*time.Second, src{"e2e": 120}, []Source{src{"e2e": 100}})
	}
	if o := w.Outcome(); !o.Pass || o.Value != 20 || o.Err != "" || o.Fired != 0 {
		t.Errorf("calm: %+v", o)
	}
	// Watched 3 s of a 5 s hold: it could not have fired, so no verdict.
	w = &Watch{Trigger: tr}
	for s := 0; s <= 3; s++ {
		w.Step(time.Duration(s)*time.Second, src{"e2e": 120}, []Source{src{"e2e": 100}})
	}
	if o := w.Outcome(); o.Pass || !strings.Contains(o.Err, "could not have fired") {
		t.Errorf("short: %+v", o)
	}
	// No baseline, ever: never evaluated.
	w = &Watch{Trigger: tr}
	w.Step(time.Second, src{"e2e": 120}, nil)
	if o := w.Outcome(); o.Pass || !strings.Contains(o.Err, "never evaluated: its baseline was not measured yet") {
		t.Errorf("no baseline: %+v", o)
	}
	// A relative change from a zero baseline has no value.
	rel, _ := ParseTrigger("rel(error_rate) > 50%")
	w = &Watch{Trigger: rel}
	w.Step(time.Second, src{"error_rate": 0.1}, []Source{src{"error_rate": 0}})
	if o := w.Outcome(); o.Pass || !strings.Contains(o.Err, "baseline of error_rate is 0") {
		t.Errorf("zero baseline: %+v", o)
	}
	// rel: (0.3 − 0.1) / 0.1 = 200 % > 150 %: fires at once (no for).
	rel, _ = ParseTrigger("rel(error_rate) > 150%")
	w = &Watch{Trigger: rel}
	if !w.Step(time.Second, src{"error_rate": 0.3}, []Source{src{"error_rate": 0.1}}) {
		t.Error("rel did not fire")
	}
	if o := w.Outcome(); math.Abs(o.Value-2) > 1e-12 {
		t.Errorf("rel value %v, want 2", o.Value)
	}
}

// TestWatchUnknownSteps: a step whose figure could not be measured (an
// empty window: nothing completed in it) does not break a hold and cannot
// fire one. Bad windows with empty ones between them fire (they passed,
// as each empty one restarted the hold); a stretch where the figure was
// missing that, had it held, would have fired is no pass but no verdict,
// at the stage's start too, and with no for; windows before the stage's
// first figure of any kind are no evaluation.
func TestWatchUnknownSteps(t *testing.T) {
	tr, _ := ParseTrigger("p95(e2e) > 1s for 4s and error_rate >= 5%")
	steps := map[byte]src{
		'B': {"e2e": 3000, "error_rate": 0.5},              // bad: holds
		'G': {"e2e": 100, "error_rate": 0.5},               // good: does not hold
		'U': {"e2e": math.NaN(), "error_rate": 0.5},        // e2e missing, errors high
		'N': {"e2e": math.NaN(), "error_rate": 0.01},       // e2e missing, errors low: does not hold
		'E': {"e2e": math.NaN(), "error_rate": math.NaN()}, // nothing completed
	}
	noFor, _ := ParseTrigger("p95(e2e) > 1s and error_rate >= 5%")
	for _, tc := range []struct {
		name, seq string // one step a second from 0 s
		firedAt   int    // -1: did not fire
		pass      bool
		err       string
	}{
		{"bad with empty windows between", "BBUBBUBBU", 4, false, ""},
		{"outage: no answer for 10 s", "GGGUUUUUUUUUUGGG", -1, false, "had they held, it would have fired"},
		{"empty windows, errors low", "GGGNNNNNNNNNNGGG", -1, true, ""},
		{"empty windows shorter than the hold", "GGGBUUGGGUUBGGG", -1, true, ""},
		{"nothing completed at the start", "EEEEEEGGGGG", -1, true, ""},
		{"outage from the start", "UUUUUUGGGGG", -1, false, "had they held, it would have fired"},
		{"good throughout", "GGGGGGGGG", -1, true, ""},
		{"bad throughout", "BBBBBBB", 4, false, ""},
		{"no for: one bad second unmeasured", "GGGUGGG", -1, false, "had they held, it would have fired"},
		{"no for: bad at once", "GGBGG", 2, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &Watch{Trigger: tr}
			if strings.HasPrefix(tc.name, "no for") {
				w.Trigger = noFor
			}
			fired := -1
			for i := range len(tc.seq) {
				if w.Step(time.Duration(i)*time.Second, steps[tc.seq[i]], nil) && fired < 0 {
					fired = i
				}
			}
			o := w.Outcome()
			if fired != tc.firedAt || o.Pass != tc.pass || (tc.err == "") != (o.Err == "") || !strings.Contains(o.Err, tc.err) {
				t.Errorf("%s: fired at %d, outcome %+v; want fired at %d, pass %v, err %q", tc.seq, fired, o, tc.firedAt, tc.pass, tc.err)
			}
		})
	}
}

// doubtedSrc doubts every figure: it rests on usage the run does not trust.
type doubtedSrc struct{ src }

func (doubtedSrc) Doubt(string, float64, string) string { return "usage cannot be trusted" }

// TestWatchDoubted: a trigger on a figure its source doubts (output_tps
// resting on usage that cannot be trusted) does not fire on it, however
// bad it reads, and cannot judge, saying why; the same figures not doubted
// fire it.
func TestWatchDoubted(t *testing.T) {
	tr, err := ParseTrigger("output_tps < 100 for 2s")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		src     Source
		firedAt int
		err     string
	}{
		{"doubted", doubtedSrc{src{"output_tps": 5}}, -1, "output_tps cannot be judged: usage cannot be trusted"},
		{"trusted", src{"output_tps": 5}, 2, ""},
	} {
		w := &Watch{Trigger: tr}
		fired := -1
		for i := range 6 {
			if w.Step(time.Duration(i)*time.Second, tc.src, nil) && fired < 0 {
				fired = i
			}
		}
		o := w.Outcome()
		if fired != tc.firedAt || (tc.err == "") != (o.Err == "") || !strings.Contains(o.Err, tc.err) || o.Unjudged != (tc.err != "") {
			t.Errorf("%s: fired at %d, outcome %+v; want fired at %d, err %q", tc.name, fired, o, tc.firedAt, tc.err)
		}
	}
}

// boundedSrc is a src whose figures carry a measurement-error range.
type boundedSrc struct {
	src
	lo, hi map[string]float64
}

func (b boundedSrc) Bounds(_ string, _ float64, metric string) (float64, float64, bool) {
	lo, ok := b.lo[metric]
	return lo, b.hi[metric], ok
}

// TestWatchJudgesAtErrorEnds: a trigger is judged at both ends of its
// figures' measurement error, as a threshold is: a window whose range
// straddles the limit is an unknown step (it cannot fire the trigger, and
// a hold of them leaves it unable to judge), one whose whole range is
// over fires it, one whose whole range is under passes. Changes take the
// ends of both the window's range and the baseline's. It judged the
// measured figure alone.
func TestWatchJudgesAtErrorEnds(t *testing.T) {
	over, _ := ParseTrigger("p99(ttft) > 100ms for 3s")
	delta, _ := ParseTrigger("delta(p99(ttft)) > 50ms for 3s")
	at := func(v, lo, hi float64) Source {
		return boundedSrc{src{"ttft": v}, map[string]float64{"ttft": lo}, map[string]float64{"ttft": hi}}
	}
	for _, tc := range []struct {
		name   string
		tr     Trigger
		now    Source
		base   Source
		fired  int
		pass   bool
		errHas string
	}{
		{"range straddles the limit", over, at(103, 97, 103), nil, 0, false, "true value anywhere in [97, 103]"},
		{"whole range over", over, at(150, 140, 150), nil, 1, false, ""},
		{"whole range under", over, at(60, 55, 60), nil, 0, true, ""},
		{"no range: the measured figure", over, src{"ttft": 103}, nil, 1, false, ""},
		// 160 − 100 = 60 measured; at the ends [150−104, 160−100] = [46, 60].
		{"change straddles", delta, at(160, 150, 160), at(100, 100, 104), 0, false, "[46, 60]"},
		{"change surely over", delta, at(200, 190, 200), at(100, 100, 104), 1, false, ""},
	} {
		w := &Watch{Trigger: tc.tr}
		for s := 0; s <= 6; s++ {
			w.Step(time.Duration(s)*time.Second, tc.now, []Source{tc.base})
		}
		o := w.Outcome()
		if w.Fired() != tc.fired || o.Pass != tc.pass || !strings.Contains(o.Err, tc.errHas) || (tc.errHas == "") != (o.Err == "") {
			t.Errorf("%s: fired %d pass %v err %q; want fired %d pass %v err with %q", tc.name, w.Fired(), o.Pass, o.Err, tc.fired, tc.pass, tc.errHas)
		}
	}
}
