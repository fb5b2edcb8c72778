package binomial

import (
	"math"
	"testing"
)

// TestWilson checks the interval against values worked out independently
// (in Python) from
// (p̂ + z²/2n ± z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n), z = 1.959964.
func TestWilson(t *testing.T) {
	cases := []struct {
		k, n   int
		lo, hi float64
	}{
		{30, 100, 0.218949, 0.395849},
		{0, 20, 0, 0.161125},
		{20, 20, 0.838875, 1},
		{1, 2, 0.094531, 0.905469},
		{500, 1000, 0.469070, 0.530930},
	}
	for _, tc := range cases {
		lo, hi := Wilson(tc.k, tc.n, 0.95)
		if math.Abs(lo-tc.lo) > 1e-5 || math.Abs(hi-tc.hi) > 1e-5 {
			t.Errorf("Wilson(%d, %d) = [%.6f, %.6f], want [%.6f, %.6f]", tc.k, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
	if lo, hi := Wilson(0, 0, 0.95); lo != 0 || hi != 1 {
		t.Errorf("Wilson(0, 0) = [%g, %g], want [0, 1]", lo, hi)
	}
}

// TestWilsonCoverage checks by simulation that the 95 % interval holds the
// true rate about 95 % of the time at p = 0.3, n = 200.
func TestWilsonCoverage(t *testing.T) {
	const p, n, runs = 0.3, 200, 4000
	x := uint64(12345)
	next := func() float64 { // splitmix64
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return float64((z^(z>>31))>>11) / (1 << 53)
	}
	in := 0
	for range runs {
		k := 0
		for range n {
			if next() < p {
				k++
			}
		}
		if lo, hi := Wilson(k, n, 0.95); lo <= p && p <= hi {
			in++
		}
	}
	if cov := float64(in) / runs; cov < 0.93 || cov > 0.97 {
		t.Errorf("coverage %.3f of the 95%% interval, want within [0.93, 0.97]", cov)
	}
}
