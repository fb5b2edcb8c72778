package chaos

import (
	"math"
	"testing"
	"time"
)

// plantedStage is a 5 s stage with a request every 100 ms and a failing
// fault window from 2 s to 3 s: before it requests take 20 ms; inside it
// all are retried, the first two fail (300 ms) and the rest succeed in
// 250 ms; for half a second after it they take 100 ms, then 20 ms again.
func plantedStage(t0 time.Time) ([]Sample, []Window) {
	var ss []Sample
	for i := 0; i < 50; i++ {
		sent := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		s := Sample{Sent: sent, End: sent.Add(20 * time.Millisecond), Attempts: 1, Upstream: "a"}
		switch {
		case i == 20 || i == 21:
			s.End, s.Failed, s.Attempts, s.Upstream = sent.Add(300*time.Millisecond), true, 2, "b"
		case i >= 22 && i < 30:
			s.End, s.Attempts, s.Upstream = sent.Add(250*time.Millisecond), 2, "b"
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
	// First success sent after onset: 2.2 s + 250 ms = 450 ms after it.
	near("failover_ms", *c.FailoverMS, 450)
	// Bin [3.0, 3.5) has p99 100 ms > 1.5 × 20 ms; [3.5, 4.0) is back.
	near("recovery_ms", *c.RecoveryMS, 500)
	if c.Retried != 10 || c.RetriedOK != 8 || c.ErrorsSeen != 2 {
		t.Errorf("retried %d ok %d errors %d", c.Retried, c.RetriedOK, c.ErrorsSeen)
	}
	near("r_retry", *c.RRetry, 0.8)
	near("msr", *c.MSR, (1-450.0/800)*0.8)
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
	if w := c.Windows[0]; w.Outside.Requests != 40 || *c.RecoveryMS != 500 || *c.FailoverMS != 450 {
		t.Errorf("with an overlapping latency window: outside %d, recovery %v, failover %v", w.Outside.Requests, *c.RecoveryMS, *c.FailoverMS)
	}
	if w := c.Windows[1]; w.Inside.Requests != 50 || w.Outside.Requests != 0 || w.FailoverMS != nil {
		t.Errorf("latency window: %+v", w)
	}
}

// TestFiguresEdges: no retries gives no MSR (with a warning), a window
// still open at the stage's end no recovery, no success no failover.
func TestFiguresEdges(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ss, ws := plantedStage(t0)
	for i := range ss {
		ss[i].Attempts = 1
	}
	ws[0].End = time.Time{}
	c := Figures(ss, ws, FigureOptions{Start: t0, End: t0.Add(5 * time.Second)})
	if c.MSR != nil || c.RRetry != nil || c.RecoveryMS != nil || len(c.Warnings) == 0 {
		t.Errorf("msr %v r_retry %v recovery %v warnings %v", c.MSR, c.RRetry, c.RecoveryMS, c.Warnings)
	}
	if c.Windows[0].EndS != 5 {
		t.Errorf("open window end_s %v, want the stage's end", c.Windows[0].EndS)
	}
	for i := 20; i < 50; i++ {
		ss[i].Failed = true
	}
	c = Figures(ss, ws, FigureOptions{Start: t0, End: t0.Add(5 * time.Second)})
	if c.FailoverMS != nil {
		t.Errorf("failover %v with no success after onset", *c.FailoverMS)
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
