package schedule

import (
	"fmt"
	"math"
	"time"
)

// TokenRate paces requests so that their expected tokens, not their
// count, arrive at Rate per second (the seeds' Token/s control, e.g. a
// token_rate of 1280/s). Inner is a pacer of the chosen arrival process at
// one request per second (Constant, Poisson or Gamma at rate 1): its gaps
// are unit-mean draws X_n, and the gap after request n−1 is
//
//	X_n · Tokens(n−1) / Rate.
//
// Since X_n does not depend on the tokens, the long-run rate is
// E[tokens] / E[gap] = Rate (renewal-reward), whatever the distribution
// of tokens; the arrival process keeps its shape (a constant process
// sends each request as soon as the previous one's tokens are due).
// Tokens must return a value > 0 (a request of no tokens would take no
// time: it is counted as one token); it is called once per request, in
// order, like Shaped's Factor.
type TokenRate struct {
	Inner  Pacer
	Tokens func(n uint64) float64
	Rate   float64 // tokens per second
}

var _ Pacer = TokenRate{}

// Pace implements Pacer. The first request is sent at offset 0.
func (t TokenRate) Pace(n uint64, prev time.Duration) time.Duration {
	if n == 0 {
		return 0
	}
	q := t.Inner.Pace(n-1, 0)
	unit := float64(t.Inner.Pace(n, q)-q) / float64(time.Second) // X_n, mean 1
	tok := t.Tokens(n - 1)
	if !(tok >= 1) || math.IsInf(tok, 0) {
		tok = 1
	}
	return prev + time.Duration(unit*tok/t.Rate*float64(time.Second))
}

// GapCV is the coefficient of variation of an arrival process's gaps:
// 0 for constant, 1 for Poisson, 1/√shape for gamma (0 when unknown).
func GapCV(arrival string, burstiness float64) float64 {
	switch arrival {
	case "poisson":
		return 1
	case "gamma":
		if burstiness > 0 {
			return 1 / math.Sqrt(burstiness)
		}
	}
	return 0
}

// NewTokenRate returns the pacer of an arrival process name (constant,
// poisson or gamma, with burstiness the gamma shape) sending tokens(n)
// tokens for request n at rate tokens per second.
func NewTokenRate(arrival string, rate, burstiness float64, seed uint64, tokens func(n uint64) float64) (Pacer, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("token rate must be a positive number of tokens per second, got %v", rate)
	}
	inner, err := New(arrival, 1, burstiness, seed)
	if err != nil {
		return nil, err
	}
	return TokenRate{Inner: inner, Tokens: tokens, Rate: rate}, nil
}
