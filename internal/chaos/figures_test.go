package chaos

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// plantedStage is a 5 s stage with a request every 100 ms and a failing
// fault window from 2 s to 3 s: before it requests take 20 ms; inside it
// all are retried, the first two fail (300 ms) and the rest succeed in
// 250 ms, their first token 200 ms after the send; for half a second
// after it they take 100 ms, then 20 ms again.
func plantedStage(t0 time.Time) ([]Sample, []Window) {
	var ss []Sample
	for i := 0; i < 50; i++ {
		sent := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		s := Sample{Sent: sent, End: sent.Add(20 * time.Millisecond), Attempts: 1, Upstream: "a"}
		switch {
		case i == 20 || i == 21:
			s.End, s.Failed, s.Attempts, s.Upstream = sent.Add(300*time.Millisecond), true, 2, "b"
		case i >= 22 && i < 30:
			s.End, s.FirstToken, s.Attempts, s.Upstream = sent.Add(250*time.Millisecond), sent.Add(200*time.Millisecond), 2, "b"
		case i >= 30 && i < 35:
			s.End = sent.Add(100 * time.Millisecond)
		}
		ss = append(ss, s)
	}
	return ss, []Window{{Faults: `{"blackhole_rate":1}`, Start: t0.Add(2 * time.Second), End: t0.Add(3 * time.Second), Failing: true}}
}

func TestFigures(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ss, ws := plantedStage(t0)
	c := Figures(ss, ws, FigureOptions{Start: t0, End: t0.Add(5 * time.Second), RecoveryBin: 500 * time.Millisecond,
		Injected: map[string]int64{"blackhole": 20}, Failing: 20})
	if len(c.Windows) != 1 {
		t.Fatalf("windows %+v", c.Windows)
	}
	w := c.Windows[0]
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("start_s", w.StartS, 2)
	near("end_s", w.EndS, 3)
	if w.Inside.Requests != 10 || w.Inside.Errors != 2 || w.Outside.Requests != 40 || w.Outside.Errors != 0 {
		t.Errorf("inside %+v outside %+v", w.Inside, w.Outside)
	}
	near("inside error rate", w.Inside.ErrorRate, 0.2)
	near("inside p50", w.Inside.E2EP50MS, 250)
	near("inside p99", w.Inside.E2EP99MS, 250)
	near("outside p50", w.Outside.E2EP50MS, 20)
	near("outside p99", w.Outside.E2EP99MS, 100)
	// Wilson 95 % interval of 2/10.
	if lo, hi := w.Inside.ErrorRateCI95[0], w.Inside.ErrorRateCI95[1]; math.Abs(lo-0.0567) > 1e-4 || math.Abs(hi-0.5098) > 1e-4 {
		t.Errorf("Wilson interval %v, want [0.0567, 0.5098]", w.Inside.ErrorRateCI95)
	}
	// The first success the fault reached was sent 200 ms after onset and
	// its first token came 200 ms later: 400 ms (to its end: 450).
	near("failover_ms", *c.FailoverMS, 400)
	// Bin [3.0, 3.5) has p99 100 ms > 1.5 × 20 ms; [3.5, 4.0) is back.
	near("recovery_ms", *c.RecoveryMS, 500)
	if c.Retried != 10 || c.RetriedOK != 8 || c.ErrorsSeen != 2 {
		t.Errorf("retried %d ok %d errors %d", c.Retried, c.RetriedOK, c.ErrorsSeen)
	}
	near("r_retry", *c.RRetry, 0.8)
	near("msr", *c.MSR, (1-400.0/800)*0.8)
	if c.MSRGrade != "low" {
		t.Errorf("grade %q", c.MSRGrade)
	}
	near("error amplification", *c.ErrorAmplification, 0.1)
	if c.Upstreams["a"] != 40 || c.Upstreams["b"] != 10 {
		t.Errorf("upstreams %v", c.Upstreams)
	}

	// With an E2E SLO of 150 ms the 100 ms bin already counts as recovered.
	c = Figures(ss, ws, FigureOptions{Start: t0, End: t0.Add(5 * time.Second), RecoveryBin: 500 * time.Millisecond, P99Bound: 150 * time.Millisecond})
	near("recovery_ms under SLO", *c.RecoveryMS, 0)
	if c.ErrorAmplification != nil {
		t.Errorf("amplification without injected faults: %v", *c.ErrorAmplification)
	}

	// A latency rule over the whole stage changes none of the black-hole
	// window's figures: outside is outside that window.
	ws = append(ws, Window{Faults: `{"latency":"fixed:1ms"}`, Start: t0})
	c = Figures(ss, ws, FigureOptions{Start: t0, End: t0.Add(5 * time.Second), RecoveryBin: 500 * time.Millisecond})
	if w := c.Windows[0]; w.Outside.Requests != 40 || *c.RecoveryMS != 500 || *c.FailoverMS != 400 {
		t.Errorf("with an overlapping latency window: outside %d, recovery %v, failover %v", w.Outside.Requests, *c.RecoveryMS, *c.FailoverMS)
	}
	if w := c.Windows[1]; w.Inside.Requests != 50 || w.Outside.Requests != 0 || w.FailoverMS != nil {
		t.Errorf("latency window: %+v", w)
	}
}

// TestFiguresEdges: no retries gives no MSR (with the reason), a window
// still open at the stage's end no recovery, a failover that never
// completes MSR 0, a fault no request felt no MSR (not 0).
func TestFiguresEdges(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ss, ws := plantedStage(t0)
	for i := range ss {
		ss[i].Attempts = 1
	}
	ws[0].End = time.Time{}
	c := Figures(ss, ws, FigureOptions{Start: t0, End: t0.Add(5 * time.Second)})
	if c.MSR != nil || c.RRetry != nil || c.RecoveryMS != nil || !strings.Contains(c.MSRReason, "no request was retried") {
		t.Errorf("no retries: msr %v r_retry %v recovery %v reason %q", c.MSR, c.RRetry, c.RecoveryMS, c.MSRReason)
	}
	if c.Windows[0].EndS != 5 {
		t.Errorf("open window end_s %v, want the stage's end", c.Windows[0].EndS)
	}
	// Every request the fault reached was retried and failed: the
	// failover never completed, MSR 0 (R_retry is 0 too).
	ss, ws = plantedStage(t0)
	for i := 20; i < 30; i++ {
		ss[i].Failed = true
	}
	c = Figures(ss, ws, FigureOptions{Start: t0, End: t0.Add(5 * time.Second)})
	if c.FailoverMS != nil || c.MSR == nil || *c.MSR != 0 || !strings.Contains(c.MSRReason, "did not complete") {
		t.Errorf("no success: failover %v msr %v reason %q", c.FailoverMS, c.MSR, c.MSRReason)
	}
	// A window no request felt (every request inside went through at
	// once): no failover was needed, so no MSR rather than 0.
	ss, ws = plantedStage(t0)
	for i := range ss {
		ss[i].Attempts, ss[i].Failed, ss[i].End, ss[i].FirstToken = 1, false, ss[i].Sent.Add(20*time.Millisecond), time.Time{}
	}
	ss[45].Attempts = 2 // a retry outside the window
	c = Figures(ss, ws, FigureOptions{Start: t0, End: t0.Add(5 * time.Second)})
	if c.MSR != nil || c.FailoverMS != nil || !strings.Contains(c.MSRReason, "no failover was needed") {
		t.Errorf("fault felt by none: msr %v failover %v reason %q", c.MSR, c.FailoverMS, c.MSRReason)
	}
	// A window nothing was sent in (a client stalled past it; seen in
	// TestBlackholeFailover on a loaded machine: 0 requests inside, 90
	// outside): not measured, which is not "no failover was needed".
	ss, _ = plantedStage(t0)
	gap := []Window{{Faults: `{"blackhole_rate":1}`, Start: t0.Add(2050 * time.Millisecond), End: t0.Add(2090 * time.Millisecond), Failing: true}}
	c = Figures(ss, gap, FigureOptions{Start: t0, End: t0.Add(5 * time.Second)})
	if c.Windows[0].Inside.Requests != 0 || c.MSR != nil || strings.Contains(c.MSRReason, "no failover was needed") ||
		!slices.ContainsFunc(c.Warnings, func(s string) bool { return strings.HasPrefix(s, "window 0: no request was sent during it") }) {
		t.Errorf("window nothing was sent in: inside %d, msr %v, reason %q, warnings %q", c.Windows[0].Inside.Requests, c.MSR, c.MSRReason, c.Warnings)
	}
	// No failing window at all.
	c = Figures(ss, nil, FigureOptions{Start: t0, End: t0.Add(5 * time.Second)})
	if c.MSR != nil || !strings.Contains(c.MSRReason, "no failing fault window") {
		t.Errorf("no window: msr %v reason %q", c.MSR, c.MSRReason)
	}
}

// TestRRetryPerAttempt: R_retry counts retry attempts, not requests (seed
// 004 §3.3): 9 requests retried with 12 retry attempts, 7 of them
// converging, give 7/12, not 7/9.
func TestRRetryPerAttempt(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var ss []Sample
	for i := range 20 {
		sent := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		s := Sample{Sent: sent, End: sent.Add(50 * time.Millisecond), Attempts: 1}
		switch {
		case i < 3: // three requests retried twice (3 attempts), converged
			s.Attempts = 3
		case i < 7: // four retried once, converged
			s.Attempts = 2
		case i < 9: // two retried once, failed
			s.Attempts, s.Failed = 2, true
		}
		ss = append(ss, s)
	}
	c := Figures(ss, []Window{{Start: t0, End: t0.Add(time.Second), Failing: true}}, FigureOptions{Start: t0, End: t0.Add(2 * time.Second)})
	if c.Retried != 9 || c.RetryAttempts != 12 || c.RetriedOK != 7 || math.Abs(*c.RRetry-7.0/12) > 1e-12 {
		t.Errorf("retried %d attempts %d ok %d r_retry %v, want 9, 12, 7, 7/12", c.Retried, c.RetryAttempts, c.RetriedOK, *c.RRetry)
	}
	if c.MSR == nil || math.Abs(*c.MSR-(1-50.0/800)*7/12) > 1e-9 {
		t.Errorf("msr %v, want (1 − 50/800) × 7/12", c.MSR)
	}
}

func TestMSRGrade(t *testing.T) {
	for _, c := range []struct {
		failover time.Duration
		r        float64
		msr      float64
		grade    string
	}{
		{0, 1, 1, "high"},
		{80 * time.Millisecond, 1, 0.9, "high"},
		{240 * time.Millisecond, 1, 0.7, "medium"},
		{400 * time.Millisecond, 1, 0.5, "low"},
		{80 * time.Millisecond, 0.5, 0.45, "low"},
		{2 * time.Second, 1, 0, "low"},
	} {
		m := MSR(c.failover, DefaultTMax, c.r)
		if math.Abs(m-c.msr) > 1e-9 || Grade(m) != c.grade {
			t.Errorf("MSR(%v, 800ms, %v) = %v %s, want %v %s", c.failover, c.r, m, Grade(m), c.msr, c.grade)
		}
	}
}

// TestMSRWorstWindow: a stage's failover, recovery and MSR are its worst
// window's. With two failing windows, one whose failover never completed
// makes MSR 0 (the first whose did gave 0.944, "high"); with both
// complete, the slower failover (400 ms, not 50 ms) is the stage's.
func TestMSRWorstWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	stage := func(firstFails bool) ([]Sample, []Window) {
		var ss []Sample
		for i := range 100 {
			sent := t0.Add(time.Duration(i) * 100 * time.Millisecond)
			s := Sample{Sent: sent, End: sent.Add(20 * time.Millisecond), Attempts: 1}
			switch {
			case i >= 20 && i < 30 && firstFails:
				s.End, s.Failed, s.Attempts = sent.Add(300*time.Millisecond), true, 2
			case i >= 20 && i < 30: // first success sent 200 ms in, answered 200 ms later
				if i < 22 {
					s.End, s.Failed, s.Attempts = sent.Add(300*time.Millisecond), true, 2
				} else {
					s.End, s.Attempts = sent.Add(200*time.Millisecond), 2
				}
			case i >= 60 && i < 70: // retried at once: 50 ms
				s.End, s.Attempts = sent.Add(50*time.Millisecond), 2
			}
			ss = append(ss, s)
		}
		return ss, []Window{
			{Faults: `{"blackhole_rate":1}`, Start: t0.Add(2 * time.Second), End: t0.Add(3 * time.Second), Failing: true},
			{Faults: `{"blackhole_rate":1}`, Start: t0.Add(6 * time.Second), End: t0.Add(7 * time.Second), Failing: true},
		}
	}
	ss, ws := stage(true)
	c := Figures(ss, ws, FigureOptions{Start: t0, End: t0.Add(10 * time.Second)})
	if c.MSR == nil || *c.MSR != 0 || !strings.Contains(c.MSRReason, "in 1 of its 2 failing windows") || *c.FailoverMS != 50 {
		t.Errorf("first window's failover never completed: msr %v reason %q failover %v", c.MSR, c.MSRReason, c.FailoverMS)
	}
	ss, ws = stage(false)
	c = Figures(ss, ws, FigureOptions{Start: t0, End: t0.Add(10 * time.Second)})
	if c.FailoverMS == nil || *c.FailoverMS != 400 || c.MSR == nil || math.Abs(*c.MSR-(1-400.0/800)*float64(c.RetriedOK)/float64(c.RetryAttempts)) > 1e-12 {
		t.Errorf("both complete: failover %v msr %v, want the slower window's 400 ms", c.FailoverMS, c.MSR)
	}
}

// TestRecoveryOneDefinition: the chaos section's recovery is the
// resilience verdict's definition (resilience.RecoveryStatus): back under
// the bound and staying there until the stage ends or the next fault
// comes, a bin's error rate judged surely over the baseline's (Wilson),
// and "not measured" (no figure, a warning saying so) when the stage ends
// within a bin of the last bad one. The chaos section used to take the
// first good bin, so a service that came back and fell over again had
// recovered at once.
// TestRecoveryBeforeTheNextFault: a request sent just before the next
// fault and caught by it (300 ms, where the others take 20) is that
// fault's, not a sign the service had not recovered from the one before:
// the window recovers at once. It made the window "not recovered" when
// requests were judged by their send alone (TestBlackholeFailover failed
// so once in CI, its windows 0.25 s apart at 40 req/s).
func TestRecoveryBeforeTheNextFault(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var ss []Sample
	for i := 0; i < 100; i++ {
		sent := t0.Add(time.Duration(i) * 50 * time.Millisecond)
		s := Sample{Sent: sent, End: sent.Add(20 * time.Millisecond), Attempts: 1, Upstream: "a"}
		inFault := func(from, to time.Duration) bool { return sent.Sub(t0) >= from && sent.Sub(t0) < to }
		if inFault(2*time.Second, 3*time.Second) || inFault(3500*time.Millisecond, 4*time.Second) {
			s.End = sent.Add(300 * time.Millisecond)
		}
		ss = append(ss, s)
	}
	ss = append(ss, Sample{Sent: t0.Add(3490 * time.Millisecond), End: t0.Add(3790 * time.Millisecond), Attempts: 2, Upstream: "b"})
	ws := []Window{
		{Faults: `{"blackhole_rate":1}`, Start: t0.Add(2 * time.Second), End: t0.Add(3 * time.Second), Failing: true},
		{Faults: `{"blackhole_rate":1}`, Start: t0.Add(3500 * time.Millisecond), End: t0.Add(4 * time.Second), Failing: true},
	}
	c := Figures(ss, ws, FigureOptions{Start: t0, End: t0.Add(5 * time.Second), RecoveryBin: 250 * time.Millisecond, P99Bound: 50 * time.Millisecond})
	if w := c.Windows[0]; w.RecoveryMS == nil || *w.RecoveryMS != 0 {
		t.Errorf("window 0: recovery %v, want 0 ms (warnings %q)", w.RecoveryMS, c.Warnings)
	}
}

func TestRecoveryOneDefinition(t *testing.T) {
	t0 := time.Unix(1000, 0)
	// A request every 50 ms, 20 ms each, before a failing window from 2 s
	// to 3 s; after it, took[k] is what the requests of the k-th 500 ms
	// bin take (0: they fail).
	stage := func(took []time.Duration, failEvery int) []Sample {
		var ss []Sample
		for i := 0; i < 100; i++ {
			sent := t0.Add(time.Duration(i) * 50 * time.Millisecond)
			s := Sample{Sent: sent, End: sent.Add(20 * time.Millisecond), Attempts: 1, Upstream: "a"}
			if sent.Sub(t0) >= 2*time.Second && sent.Sub(t0) < 3*time.Second {
				s.End, s.Failed = sent.Add(300*time.Millisecond), true
			}
			if k := int(sent.Sub(t0.Add(3*time.Second)) / (500 * time.Millisecond)); sent.Sub(t0) >= 3*time.Second && k < len(took) {
				s.End = sent.Add(took[k])
				s.Failed = took[k] == 0
			}
			if failEvery > 0 && i%failEvery == 0 && sent.Sub(t0) >= 3*time.Second {
				s.Failed = true
			}
			ss = append(ss, s)
		}
		return ss
	}
	ws := []Window{{Faults: `{"error_rate":1}`, Start: t0.Add(2 * time.Second), End: t0.Add(3 * time.Second), Failing: true}}
	opts := FigureOptions{Start: t0, End: t0.Add(5 * time.Second), RecoveryBin: 500 * time.Millisecond, P99Bound: 50 * time.Millisecond}
	for _, tc := range []struct {
		name      string
		took      []time.Duration
		failEvery int
		end, bin  time.Duration
		want      float64 // ms; -1: none
		warn      string
	}{
		{"back at once", nil, 0, 5 * time.Second, 0, 0, ""},
		{"back, over again, back", []time.Duration{20 * time.Millisecond, 200 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}, 0, 5 * time.Second, 0, 1000, ""},
		{"failing fast is not recovered", []time.Duration{20 * time.Millisecond, 0, 0, 0}, 0, 5 * time.Second, 0, -1, "not recovered"},
		{"stage ends within a bin of the last bad one", []time.Duration{200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond, 20 * time.Millisecond}, 0, 4700 * time.Millisecond, 0, -1, "recovery not measured"},
		// One failure in twenty (a 1 s bin) after the fault, against a
		// baseline of none: not surely over the baseline's rate plus
		// one point (Wilson 99 %: from 0.6 %).
		{"chance errors do not hold it back", nil, 20, 5 * time.Second, time.Second, 0, ""},
	} {
		o := opts
		o.End = t0.Add(tc.end)
		if tc.bin > 0 {
			o.RecoveryBin = tc.bin
		}
		c := Figures(stage(tc.took, tc.failEvery), ws, o)
		w := c.Windows[0]
		switch {
		case tc.want < 0 && (w.RecoveryMS != nil || c.RecoveryMS != nil):
			t.Errorf("%s: recovery %v ms, want none", tc.name, *w.RecoveryMS)
		case tc.want >= 0 && (w.RecoveryMS == nil || *w.RecoveryMS != tc.want):
			t.Errorf("%s: recovery %v, want %v ms (warnings %q)", tc.name, w.RecoveryMS, tc.want, c.Warnings)
		}
		if tc.warn != "" && !strings.Contains(strings.Join(c.Warnings, "\n"), tc.warn) {
			t.Errorf("%s: warnings %q, want one saying %q", tc.name, c.Warnings, tc.warn)
		}
	}
}
