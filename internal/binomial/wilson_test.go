package binomial

import (
	"math"
	"math/rand/v2"
	"slices"
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

// TestQuantileRanks checks the order-statistic ranks against values
// worked out from the binomial distribution by hand, and by simulation
// that the interval between the two ranks holds the true median and 90th
// percentile of a uniform population about 95 % of the time.
func TestQuantileRanks(t *testing.T) {
	for _, tc := range []struct {
		n      int
		p      float64
		lo, hi int
	}{
		// n = 20, median: P(B ≤ 5) = 0.0207 ≤ 0.025 < P(B ≤ 6) = 0.0577,
		// so lo = 6; P(B ≤ 14) = 0.9793 ≥ 0.975, so hi = 15.
		{20, 0.5, 6, 15},
		// Too few samples for a 95 % bound on the 99th percentile.
		{10, 0.99, 9, 11},
		{0, 0.5, 0, 1},
	} {
		lo, hi := QuantileRanks(tc.n, tc.p, 0.95)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("QuantileRanks(%d, %v) = %d, %d, want %d, %d", tc.n, tc.p, lo, hi, tc.lo, tc.hi)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		n int
		p float64
	}{{50, 0.5}, {200, 0.9}, {5000, 0.99}} {
		covered, runs := 0, 400
		lo, hi := QuantileRanks(c.n, c.p, 0.95)
		xs := make([]float64, c.n)
		for range runs {
			for i := range xs {
				xs[i] = rng.Float64()
			}
			slices.Sort(xs)
			if lo >= 1 && hi <= c.n && xs[lo-1] <= c.p && c.p <= xs[hi-1] {
				covered++
			}
		}
		if f := float64(covered) / float64(runs); f < 0.92 || f > 0.995 {
			t.Errorf("n %d, p %v: ranks [%d, %d] held the quantile in %.3f of %d samples, want about 0.95", c.n, c.p, lo, hi, f, runs)
		}
	}
}
