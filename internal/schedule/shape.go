package schedule

import (
	"time"
)

// Shaped scales each gap of a stateless pacer (Constant, Poisson, Gamma)
// by 1/Factor(n): request n is sent Gap(n)/Factor(n) after request n−1.
// With Factor the complexity multiplier 0.75^(score/20), complex requests
// are sent at a lower rate (docs/design.md §3, complexity-aware shaping).
// Factor must return a value > 0; it is called once per request, in order.
type Shaped struct {
	Inner  Pacer
	Factor func(n uint64) float64
}

var _ Pacer = Shaped{}

// Pace implements Pacer.
func (s Shaped) Pace(n uint64, prev time.Duration) time.Duration {
	if n == 0 {
		return 0
	}
	q := s.Inner.Pace(n-1, 0)
	gap := s.Inner.Pace(n, q) - q
	f := s.Factor(n)
	if !(f > 0) {
		f = 1
	}
	return prev + time.Duration(float64(gap)/f)
}

// Trace replays recorded send times: request n at Offsets[n]. Past the end
// the trace repeats, each repetition starting one mean gap after the last
// request of the one before.
type Trace struct {
	Offsets []time.Duration
}

var _ Pacer = Trace{}

// Pace implements Pacer.
func (t Trace) Pace(n uint64, _ time.Duration) time.Duration {
	l := uint64(len(t.Offsets))
	if l == 0 {
		return 0
	}
	span := t.Offsets[l-1]
	period := span
	if l > 1 {
		period += span / time.Duration(l-1)
	} else {
		period = time.Second
	}
	return time.Duration(n/l)*period + t.Offsets[n%l]
}
