package schedule

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestTokenRateHitsTarget draws 20,000 requests of very different token
// counts under each arrival process and checks that the tokens sent per
// second of schedule are the target within 2 %: the tokens of every request
// but the last over the offset of the last (the gap after a request is its
// tokens' share of the rate).
func TestTokenRateHitsTarget(t *testing.T) {
	const n = 20000
	const target = 1280.0
	// Token counts from 50 to 8,050, heavy on short requests: input +
	// output of a chat mix.
	rng := rand.New(rand.NewPCG(7, 7))
	tokens := make([]float64, n)
	for i := range tokens {
		tokens[i] = 50 + math.Floor(8000*math.Pow(rng.Float64(), 3))
	}
	tok := func(i uint64) float64 { return tokens[i] }
	for _, tc := range []struct {
		arrival    string
		burstiness float64
	}{{"constant", 0}, {"poisson", 0}, {"gamma", 0.5}, {"gamma", 4}} {
		t.Run(tc.arrival, func(t *testing.T) {
			p, err := NewTokenRate(tc.arrival, target, tc.burstiness, 11, tok)
			if err != nil {
				t.Fatal(err)
			}
			var prev time.Duration
			var sum float64
			for i := uint64(0); i < n; i++ {
				off := p.Pace(i, prev)
				if off < prev {
					t.Fatalf("request %d goes back in time", i)
				}
				prev = off
				if i < n-1 {
					sum += tokens[i]
				}
			}
			got := sum / prev.Seconds()
			if rel := math.Abs(got/target - 1); rel > 0.02 {
				t.Errorf("%s: %.1f tokens/s over %d requests, want %.0f within 2 %% (off by %.2f %%)", tc.arrival, got, n, target, 100*rel)
			}
			t.Logf("%s burstiness %g: %.1f tokens/s (%.2f %% off)", tc.arrival, tc.burstiness, got, 100*(got/target-1))
		})
	}
}

// TestTokenRateGapsFollowTokens checks that a request's tokens set the gap
// after it: under constant arrivals a 1,000-token request is followed by a
// gap ten times that after a 100-token one, each exactly tokens/rate.
func TestTokenRateGapsFollowTokens(t *testing.T) {
	tok := func(n uint64) float64 {
		if n%2 == 0 {
			return 100
		}
		return 1000
	}
	p, err := NewTokenRate("constant", 500, 0, 1, tok)
	if err != nil {
		t.Fatal(err)
	}
	g := gaps(p, 6)
	for i, want := range []float64{0.2, 2, 0.2, 2, 0.2, 2} {
		if math.Abs(g[i]-want) > 1e-9 {
			t.Errorf("gap %d = %v s, want %v s (tokens of request %d / 500 tokens/s)", i+1, g[i], want, i)
		}
	}
}

func TestTokenRateRejects(t *testing.T) {
	one := func(uint64) float64 { return 1 }
	for _, tc := range []struct {
		arrival string
		rate    float64
	}{{"poisson", 0}, {"poisson", -5}, {"poisson", math.Inf(1)}, {"trace", 10}, {"gamma", 10}} {
		if _, err := NewTokenRate(tc.arrival, tc.rate, 0, 1, one); err == nil {
			t.Errorf("%s at %v tokens/s accepted", tc.arrival, tc.rate)
		}
	}
	// A request of no tokens counts as one: time still moves.
	p, _ := NewTokenRate("constant", 10, 0, 1, func(uint64) float64 { return 0 })
	if g := gaps(p, 1); g[0] != 0.1 {
		t.Errorf("gap after a request of no tokens = %v s, want 0.1 s", g[0])
	}
}
