package schedule

import (
	"math"
	"testing"
	"time"
)

func TestShapedScalesGaps(t *testing.T) {
	for _, inner := range []Pacer{Constant{Rate: 10}, Poisson{Rate: 10, Seed: 3}, Gamma{Rate: 10, Shape: 0.5, Seed: 3}} {
		// Every odd request has factor 0.5: its gap doubles; even ones 1.
		s := Shaped{Inner: inner, Factor: func(n uint64) float64 { return 1 - 0.5*float64(n%2) }}
		var prev, iprev time.Duration
		for n := uint64(0); n < 200; n++ {
			off, ioff := s.Pace(n, prev), inner.Pace(n, iprev)
			if n > 0 {
				want := ioff - iprev
				if n%2 == 1 {
					want *= 2
				}
				if d := (off - prev) - want; d < -time.Nanosecond || d > time.Nanosecond {
					t.Fatalf("%T request %d: gap %v, want %v", inner, n, off-prev, want)
				}
			}
			prev, iprev = off, ioff
		}
	}
}

// TestShapedRate checks the mean rate under a fixed complexity score is the
// base rate × 0.75^(score/20).
func TestShapedRate(t *testing.T) {
	f := math.Pow(0.75, 60.0/20)
	s := Shaped{Inner: Poisson{Rate: 20, Seed: 9}, Factor: func(uint64) float64 { return f }}
	var prev time.Duration
	const n = 20000
	for i := uint64(0); i < n; i++ {
		prev = s.Pace(i, prev)
	}
	rate := float64(n-1) / prev.Seconds()
	if math.Abs(rate/(20*f)-1) > 0.03 {
		t.Fatalf("shaped rate %.3f, want %.3f ± 3%%", rate, 20*f)
	}
}

func TestTrace(t *testing.T) {
	tr := Trace{Offsets: []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond}}
	want := []time.Duration{0, 100, 300, 450, 550, 750}
	for n, w := range want {
		if got := tr.Pace(uint64(n), 0); got != w*time.Millisecond {
			t.Errorf("request %d at %v, want %v", n, got, w*time.Millisecond)
		}
	}
}
