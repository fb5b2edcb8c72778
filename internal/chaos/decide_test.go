package chaos

import (
	"math"
	"slices"
	"testing"
	"time"
)

// TestDecideRates checks the draws themselves: over 100 000 requests each
// fault happens at its rate, and lognormal latency has the planted median
// and σ; the same seed gives the same draws.
func TestDecideRates(t *testing.T) {
	lat, _ := ParseLatency("lognormal:3.2:0.5")
	rules := []Rule{Rule{ErrorRate: 0.1, RateLimitRate: 0.05, ResetRate: 0.02, BlackholeRate: 0.01, SpikeRate: 0.2, SpikeDelay: Duration(time.Second),
		Latency: lat, TruncateRate: 0.3, StallRate: 0.25, StallDuration: Duration(time.Second), DripRate: 0.15, DripDelay: Duration(time.Millisecond)}.withDefaults()}
	const n = 100000
	var rej [5]int
	var spikes, trunc, stall, drip int
	var logs []float64
	for i := uint64(0); i < n; i++ {
		d := decide(rules, 42, i, 0)
		rej[d.reject]++
		if d.spike > 0 {
			spikes++
		}
		if d.truncAfter >= 0 {
			trunc++
		}
		if d.stallAfter >= 0 {
			stall++
		}
		if d.drip > 0 {
			drip++
		}
		logs = append(logs, math.Log(float64(d.latency)/float64(time.Millisecond)))
		if d2 := decide(rules, 42, i, 0); d2 != d {
			t.Fatalf("request %d: draws differ between calls", i)
		}
	}
	for _, c := range []struct {
		name string
		got  int
		want float64
	}{
		{"error", rej[rejectError], 0.1}, {"rate_limit", rej[rejectRateLimit], 0.05}, {"reset", rej[rejectReset], 0.02},
		{"blackhole", rej[rejectBlackhole], 0.01}, {"spike", spikes, 0.2}, {"truncate", trunc, 0.3}, {"stall", stall, 0.25}, {"drip", drip, 0.15},
	} {
		// 4 binomial standard deviations.
		if f, tol := float64(c.got)/n, 4*math.Sqrt(c.want*(1-c.want)/n); math.Abs(f-c.want) > tol {
			t.Errorf("%s: %.4f, want %.3f ± %.4f", c.name, f, c.want, tol)
		}
	}
	slices.Sort(logs)
	med := quantile(logs, 0.5)
	mean, ss := 0.0, 0.0
	for _, x := range logs {
		mean += x
	}
	mean /= n
	for _, x := range logs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / (n - 1))
	if math.Abs(med-3.2) > 0.01 || math.Abs(sd-0.5) > 0.01 {
		t.Errorf("ln(latency ms): median %.4f σ %.4f, want 3.2 and 0.5", med, sd)
	}
	same := 0
	for i := uint64(0); i < 100; i++ {
		if decide(rules, 1, i, 0).latency == decide(rules, 2, i, 0).latency {
			same++
		}
	}
	if same > 0 {
		t.Errorf("seeds 1 and 2 drew the same latency for %d of 100 requests", same)
	}
}

// TestDecideWindows: a rule applies only inside its window.
func TestDecideWindows(t *testing.T) {
	rules := []Rule{Rule{From: Duration(time.Second), Until: Duration(2 * time.Second), ErrorRate: 1}.withDefaults()}
	for _, c := range []struct {
		at   time.Duration
		want reject
	}{{0, rejectNone}, {999 * time.Millisecond, rejectNone}, {time.Second, rejectError}, {1999 * time.Millisecond, rejectError}, {2 * time.Second, rejectNone}} {
		if got := decide(rules, 1, 0, c.at).reject; got != c.want {
			t.Errorf("at %v: reject %d, want %d", c.at, got, c.want)
		}
	}
}
