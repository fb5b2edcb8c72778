package observe

import (
	"math"
	"strings"
	"testing"

	"github.com/spate-dev/spate/result"
)

func series(vs ...float64) result.ServerSeries {
	s := result.ServerSeries{}
	for _, v := range vs {
		if math.IsNaN(v) {
			s.Values = append(s.Values, nil)
		} else {
			s.Values = append(s.Values, ptr(v))
		}
	}
	return s
}

func TestFigures(t *testing.T) {
	nan := math.NaN()
	// Scrapes at 0, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 7.5.
	offsets := []float64{0, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 7.5}
	ss := map[string]result.ServerSeries{
		"kv_cache_usage": series(0.5, 0.5, 0.99, 1.0, 0.2, nan, 0.1, 0.1),
		// Per second of the stage: s0 mean(0, 2) = 1, s1 2, s2 3, s3 4, s4 5,
		// s5 6 (but no TTFT then), s6 none, s7 9.
		"requests_waiting":  series(0, 2, 2, 3, 4, 5, 6, 9),
		"preemptions_per_s": series(nan, 2, 1, 0, 0, 0, 0, 0.5),
	}
	ttft := []float64{2, 1, 4, 3, 5, math.NaN(), 7, 8}
	fig, warns := Figures(offsets, ss, ttft)
	// Held means: each value until the next scrape.
	kvMean := (0.5*0.5 + 0.5*1 + 0.99*1 + 1.0*1 + 0.2*1 + 0.1*2) / 6.5
	waitMean := (0*0.5 + 2*1 + 2*1 + 3*1 + 4*1 + 5*1 + 6*2) / 7.5
	for name, want := range map[string]float64{
		"kv_cache_usage_peak":   1.0,
		"kv_cache_full_s":       2, // 0.99 from 1.5 to 2.5 and 1.0 from 2.5 to 3.5
		"kv_cache_usage_mean":   kvMean,
		"requests_waiting_peak": 9,
		"requests_waiting_mean": waitMean,
		"preemptions":           2*0.5 + 1*1 + 0.5*2, // 3
		// Seconds 0–4 and 7 pair up: x = 1,2,3,4,5,9 against y = 2,1,4,3,5,8.
		"queue_ttft_p99_pairs": 6,
	} {
		if got, ok := fig[name]; !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	// Pearson's r of x = 1,2,3,4,5,9 and y = 2,1,4,3,5,8, by hand:
	// mx = 4, my = 23/6; Σdxdy = 33, Σdx² = 40, Σdy² = 185/6, so
	// r = 33/√(40·185/6) = 0.9396664.
	r := fig["queue_ttft_p99_pearson"]
	if math.Abs(r-0.9396664) > 1e-6 {
		t.Errorf("pearson = %.7f, want 0.9396664", r)
	}
	if lo, hi := fig["queue_ttft_p99_pearson_lo95"], fig["queue_ttft_p99_pearson_hi95"]; !(lo < r && r < hi && hi <= 1 && lo >= -1) {
		t.Errorf("interval [%v, %v] does not hold r %v", lo, hi, r)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "effective") {
		t.Errorf("warnings %q: want one about few effective seconds", warns)
	}
}

func TestPearsonInterval(t *testing.T) {
	// x = 1..5, y = 2,1,4,3,5: r = 8/√(10·10) = 0.8; lag-1 autocorrelation
	// of y is 0, so n_eff = 5 and the Fisher interval is
	// tanh(atanh(0.8) ∓ 1.959964/√2) = [−0.27964, 0.98620].
	offsets := []float64{0, 1, 2, 3, 4}
	fig, _ := Figures(offsets, map[string]result.ServerSeries{"requests_waiting": series(1, 2, 3, 4, 5)}, []float64{2, 1, 4, 3, 5})
	for name, want := range map[string]float64{
		"queue_ttft_p99_pearson":      0.8,
		"queue_ttft_p99_n_eff":        5,
		"queue_ttft_p99_pearson_lo95": -0.2796400520,
		"queue_ttft_p99_pearson_hi95": 0.9861961936,
	} {
		if got := fig[name]; math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %.10f, want %.10f", name, got, want)
		}
	}
}

func TestFiguresTooFewPairs(t *testing.T) {
	fig, warns := Figures([]float64{0, 1}, map[string]result.ServerSeries{"requests_waiting": series(1, 2)}, []float64{5, 6})
	if _, ok := fig["queue_ttft_p99_pearson"]; ok {
		t.Error("correlation from two seconds")
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "need 3") {
		t.Errorf("warnings %q", warns)
	}
	_, warns = Figures([]float64{0, 1, 2}, map[string]result.ServerSeries{"requests_waiting": series(1, 1, 1)}, []float64{5, 6, 7})
	if len(warns) != 1 || !strings.Contains(warns[0], "constant") {
		t.Errorf("warnings %q", warns)
	}
}

func TestP99PerSecond(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100 … 1, unsorted
	}
	got := P99PerSecond([][]float64{{5}, nil, hundred, {1, 2}})
	want := []float64{5, math.NaN(), 99, 2}
	for i := range want {
		if !(got[i] == want[i] || math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Errorf("P99PerSecond = %v, want %v", got, want)
			break
		}
	}
	if hundred[0] != 100 {
		t.Error("P99PerSecond sorted its input")
	}
}
