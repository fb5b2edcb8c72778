package schedule

import (
	"fmt"
	"math"
	"time"
)

// Ramp changes the rate linearly from From to To requests per second over
// Over, then holds To. Each gap is drawn at the rate in force at the
// previous send: fixed (1/rate), or exponential when Poisson is set.
type Ramp struct {
	From, To float64
	Over     time.Duration
	Poisson  bool
	Seed     uint64
}

var _ Pacer = Ramp{}

// RateAt is the rate in force at offset t.
func (r Ramp) RateAt(t time.Duration) float64 {
	if r.Over <= 0 || t >= r.Over {
		return r.To
	}
	return r.From + (r.To-r.From)*float64(t)/float64(r.Over)
}

// Pace implements Pacer. The first request is sent at offset 0.
func (r Ramp) Pace(n uint64, prev time.Duration) time.Duration {
	if n == 0 {
		return 0
	}
	gap := 1 / r.RateAt(prev)
	if r.Poisson {
		gap *= -math.Log(uniform(r.Seed, n))
	}
	return prev + time.Duration(gap*float64(time.Second))
}

// NewRamp returns a ramp from `from` to `to` req/s over `over`, with
// constant or poisson arrivals.
func NewRamp(arrival string, from, to float64, over time.Duration, seed uint64) (Pacer, error) {
	for _, v := range []float64{from, to} {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("a ramp's rates must be positive numbers of requests per second, got %v", v)
		}
	}
	if over <= 0 {
		return nil, fmt.Errorf("a ramp needs a duration to ramp over")
	}
	switch arrival {
	case "constant", "":
		return Ramp{From: from, To: to, Over: over}, nil
	case "poisson":
		return Ramp{From: from, To: to, Over: over, Poisson: true, Seed: seed}, nil
	}
	return nil, fmt.Errorf("a ramp takes constant or poisson arrivals, not %q", arrival)
}
