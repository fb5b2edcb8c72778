// Package schedule computes when requests are meant to be sent.
//
// An open-loop run asks a Pacer for the intended send offset of each request
// in turn. Pacers are values with no hidden state: the offset of request n
// depends only on n, the offset of request n−1 and the pacer's fields (its
// seed included), so a schedule is fixed up front by --seed and can be
// recomputed, yet costs no memory per request.
//
// Stage: schedule.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// Pacer yields intended send times for an open-loop run.
type Pacer interface {
	// Pace returns the intended offset, from the start of the run, of
	// request n (counting from 0), given prev, the offset of request n−1
	// (0 for n == 0).
	Pace(n uint64, prev time.Duration) time.Duration
}

// PacerFunc adapts a function to a Pacer.
type PacerFunc func(n uint64, prev time.Duration) time.Duration

// Pace calls f.
func (f PacerFunc) Pace(n uint64, prev time.Duration) time.Duration { return f(n, prev) }

var (
	_ Pacer = PacerFunc(nil)
	_ Pacer = Constant{}
	_ Pacer = Poisson{}
	_ Pacer = Gamma{}
)

// Constant sends at a fixed rate: request n at n/Rate seconds.
type Constant struct {
	Rate float64 // requests per second
}

// Pace implements Pacer. Offsets are computed from n, not accumulated, so
// they do not drift.
func (c Constant) Pace(n uint64, _ time.Duration) time.Duration {
	return time.Duration(float64(n) / c.Rate * float64(time.Second))
}

// Poisson sends with exponentially distributed gaps of mean 1/Rate.
type Poisson struct {
	Rate float64
	Seed uint64
}

// Pace implements Pacer. The first request is sent at offset 0.
func (p Poisson) Pace(n uint64, prev time.Duration) time.Duration {
	if n == 0 {
		return 0
	}
	u := uniform(p.Seed, n)
	gap := -math.Log(u) / p.Rate
	return prev + time.Duration(gap*float64(time.Second))
}

// Gamma sends with gamma-distributed gaps of mean 1/Rate and shape Shape,
// as vLLM's --burstiness: Shape 1 is Poisson, below 1 is burstier, above 1
// is more regular (the gaps' coefficient of variation is 1/√Shape).
type Gamma struct {
	Rate  float64
	Shape float64
	Seed  uint64
}

// Pace implements Pacer. The first request is sent at offset 0.
func (g Gamma) Pace(n uint64, prev time.Duration) time.Duration {
	if n == 0 {
		return 0
	}
	d := distuv.Gamma{Alpha: g.Shape, Beta: g.Shape * g.Rate, Src: rand.NewPCG(g.Seed, n)}
	return prev + time.Duration(d.Rand()*float64(time.Second))
}

// uniform returns a uniform variate in (0, 1) determined by seed and n.
func uniform(seed, n uint64) float64 {
	x := splitmix(seed ^ splitmix(n+0x9e3779b97f4a7c15))
	return (float64(x>>11) + 0.5) / (1 << 53)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// New returns the pacer for an arrival process name (constant, poisson or
// gamma) at rate requests per second. burstiness is the gamma shape and is
// only used by gamma.
func New(arrival string, rate, burstiness float64, seed uint64) (Pacer, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("rate must be a positive number of requests per second, got %v", rate)
	}
	switch arrival {
	case "constant", "":
		return Constant{Rate: rate}, nil
	case "poisson":
		return Poisson{Rate: rate, Seed: seed}, nil
	case "gamma":
		if !(burstiness > 0) || math.IsInf(burstiness, 0) {
			return nil, fmt.Errorf("burstiness (gamma shape) must be positive, got %v", burstiness)
		}
		return Gamma{Rate: rate, Shape: burstiness, Seed: seed}, nil
	}
	return nil, fmt.Errorf("unknown arrival %q (use constant, poisson or gamma)", arrival)
}
