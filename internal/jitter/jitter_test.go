package jitter

import (
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		lates []time.Duration
		want  Lateness
	}{
		{"none", nil, Lateness{}},
		{"one", []time.Duration{3 * ms}, Lateness{N: 1, Median: 3 * ms, P90: 3 * ms, Max: 3 * ms}},
		{"ten", []time.Duration{9 * ms, 0, 1 * ms, 2 * ms, 3 * ms, 4 * ms, 5 * ms, 6 * ms, 7 * ms, 8 * ms},
			Lateness{N: 10, Median: 5 * ms, P90: 9 * ms, Max: 9 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summarize(tc.lates); got != tc.want {
				t.Errorf("summarize = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWiden(t *testing.T) {
	l := Lateness{N: 5, Median: 2 * time.Millisecond}
	if got, want := l.Widen(15*time.Millisecond, 4), 23*time.Millisecond; got != want {
		t.Errorf("Widen = %v, want %v", got, want)
	}
	if got := (Lateness{}).Widen(time.Millisecond, 4); got != time.Millisecond {
		t.Errorf("Widen of no lateness = %v, want the bound", got)
	}
}

// TestProbeSamples checks that a probe wakes about once a period and stops
// when told (no bound on the lateness itself: that is the machine's).
func TestProbeSamples(t *testing.T) {
	p := Start(time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	l := p.Stop()
	t.Log(l)
	if l.N < 1 || l.N > 50 {
		t.Errorf("%d wake-ups in 50 ms of 1 ms sleeps, want 1..50", l.N)
	}
	if l.Median < 0 || l.Median > l.P90 || l.P90 > l.Max {
		t.Errorf("lateness not ordered: %+v", l)
	}
	if m := Measure(10 * time.Millisecond); m.N < 1 {
		t.Errorf("Measure took no samples: %+v", m)
	}
}

// fakeTB records what BestOf reports.
type fakeTB struct {
	testing.TB
	errors, logs int
}

func (f *fakeTB) Helper()                   {}
func (f *fakeTB) Logf(string, ...any)       { f.logs++ }
func (f *fakeTB) Errorf(string, ...any)     { f.errors++ }
func (f *fakeTB) Fatalf(s string, a ...any) { panic("unexpected Fatalf") }

func TestBestOf(t *testing.T) {
	for _, tc := range []struct {
		name         string
		cleanAt      int // the first clean round (1-based), 0: none
		rounds, errs int
	}{
		{"clean at once", 1, 1, 0},
		{"a stall in the first two rounds", 3, 3, 0},
		{"wrong in every round", 0, Rounds, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTB{}
			rounds := 0
			BestOf(f, func() []string {
				rounds++
				if tc.cleanAt != 0 && rounds >= tc.cleanAt {
					return nil
				}
				return []string{"late"}
			})
			if rounds != tc.rounds || f.errors != tc.errs || f.logs != rounds-1+tc.errs {
				t.Errorf("%d rounds, %d errors, %d logs; want %d rounds, %d errors", rounds, f.errors, f.logs, tc.rounds, tc.errs)
			}
		})
	}
}
