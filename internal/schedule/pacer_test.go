package schedule

import (
	"math"
	"sort"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// gaps returns the first n inter-arrival gaps of p, in seconds.
func gaps(p Pacer, n int) []float64 {
	out := make([]float64, 0, n)
	var prev time.Duration
	for i := uint64(0); i <= uint64(n); i++ {
		at := p.Pace(i, prev)
		if i > 0 {
			out = append(out, (at - prev).Seconds())
		}
		prev = at
	}
	return out
}

// ksStat is the Kolmogorov–Smirnov statistic of sample x against cdf.
func ksStat(x []float64, cdf func(float64) float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	n := float64(len(s))
	d := 0.0
	for i, v := range s {
		f := cdf(v)
		d = math.Max(d, math.Max(f-float64(i)/n, float64(i+1)/n-f))
	}
	return d
}

func TestArrivalDistributions(t *testing.T) {
	const n = 20000
	// Critical value of the KS statistic at alpha = 0.001.
	crit := 1.95 / math.Sqrt(n)
	tests := []struct {
		name string
		p    Pacer
		cdf  func(float64) float64
		cv   float64
	}{
		{"poisson", Poisson{Rate: 50, Seed: 1}, distuv.Exponential{Rate: 50}.CDF, 1},
		{"gamma shape 1", Gamma{Rate: 50, Shape: 1, Seed: 2}, distuv.Exponential{Rate: 50}.CDF, 1},
		{"gamma bursty", Gamma{Rate: 20, Shape: 0.25, Seed: 3}, distuv.Gamma{Alpha: 0.25, Beta: 5}.CDF, 2},
		{"gamma regular", Gamma{Rate: 100, Shape: 4, Seed: 4}, distuv.Gamma{Alpha: 4, Beta: 400}.CDF, 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := gaps(tc.p, n)
			if d := ksStat(g, tc.cdf); d > crit {
				t.Errorf("KS statistic %.4f > %.4f: gaps do not follow the distribution", d, crit)
			}
			var sum, sq float64
			for _, v := range g {
				sum += v
				sq += v * v
			}
			mean := sum / n
			cv := math.Sqrt(sq/n-mean*mean) / mean
			if math.Abs(cv-tc.cv)/tc.cv > 0.05 {
				t.Errorf("coefficient of variation %.3f, want %.3f", cv, tc.cv)
			}
		})
	}
}

func TestPoissonIsNotConstant(t *testing.T) {
	// The KS test must be able to fail: constant gaps are not exponential.
	g := gaps(Constant{Rate: 50}, 2000)
	if d := ksStat(g, distuv.Exponential{Rate: 50}.CDF); d < 0.1 {
		t.Fatalf("KS statistic %.3f: test cannot tell constant from Poisson", d)
	}
}

func TestDeterministicBySeed(t *testing.T) {
	a := gaps(Poisson{Rate: 10, Seed: 7}, 100)
	b := gaps(Poisson{Rate: 10, Seed: 7}, 100)
	c := gaps(Poisson{Rate: 10, Seed: 8}, 100)
	same := true
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different gap %d", i)
		}
		same = same && a[i] == c[i]
	}
	if same {
		t.Fatal("different seeds gave the same schedule")
	}
}

func TestConstantDoesNotDrift(t *testing.T) {
	p := Constant{Rate: 3}
	var prev time.Duration
	for i := uint64(0); i <= 3_000_000; i++ {
		prev = p.Pace(i, prev)
	}
	if want := time.Duration(1_000_000) * time.Second; prev-want > time.Microsecond || want-prev > time.Microsecond {
		t.Fatalf("offset of request 3e6 at 3/s = %v, want %v", prev, want)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		arrival string
		rate, b float64
		ok      bool
	}{
		{"constant", 1, 0, true}, {"poisson", 5, 0, true}, {"gamma", 5, 0.5, true},
		{"gamma", 5, 0, false}, {"poisson", 0, 0, false}, {"poisson", -1, 0, false},
		{"weibull", 1, 0, false}, {"poisson", math.Inf(1), 0, false}, {"poisson", math.NaN(), 0, false},
	}
	for _, tc := range tests {
		_, err := New(tc.arrival, tc.rate, tc.b, 1)
		if (err == nil) != tc.ok {
			t.Errorf("New(%q, %v, %v): err = %v, want ok=%v", tc.arrival, tc.rate, tc.b, err, tc.ok)
		}
	}
}

func TestRamp(t *testing.T) {
	for _, arrival := range []string{"constant", "poisson"} {
		p, err := NewRamp(arrival, 100, 1000, 2*time.Second, 5)
		if err != nil {
			t.Fatal(err)
		}
		// Count sends in the first and the second half of the ramp:
		// ∫ rate = 100·1 + 450·1² / 2 ... = 325 and 775.
		first, second := 0, 0
		var prev time.Duration
		for n := uint64(0); ; n++ {
			at := p.Pace(n, prev)
			if at >= 2*time.Second {
				break
			}
			if at < time.Second {
				first++
			} else {
				second++
			}
			prev = at
		}
		tol := 0.03
		if arrival == "poisson" {
			tol = 0.12
		}
		if math.Abs(float64(first)-325)/325 > tol || math.Abs(float64(second)-775)/775 > tol {
			t.Errorf("%s ramp: %d sends in the first second, %d in the second; want about 325 and 775", arrival, first, second)
		}
	}
	if _, err := NewRamp("gamma", 1, 2, time.Second, 1); err == nil {
		t.Error("gamma ramp accepted")
	}
	if _, err := NewRamp("constant", 0, 2, time.Second, 1); err == nil {
		t.Error("ramp from 0 accepted")
	}
}
