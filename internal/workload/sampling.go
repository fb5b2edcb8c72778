package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Sampling is a sampling parameter of requests (temperature, top_p): a
// constant, or a value drawn per request from a uniform range (the seeds'
// temperature uniform(0.3, 0.8) per sampled prompt).
type Sampling struct {
	Lo, Hi float64
}

// ParseSampling reads a sampling parameter, a number in [0, max] or
// uniform:LO:HI within it, e.g. 0.7 or uniform:0.3:0.8; name is the
// field's, for errors.
func ParseSampling(name, s string, maxValue float64) (Sampling, error) {
	t := strings.TrimSpace(s)
	bad := fmt.Errorf("%s %q: give a number in [0, %g] or uniform:LO:HI, e.g. 0.7 or uniform:0.3:0.8", name, s, maxValue)
	num := func(v string) (float64, bool) {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return f, err == nil && f >= 0 && f <= maxValue && !math.IsNaN(f)
	}
	if rest, ok := strings.CutPrefix(t, "uniform:"); ok {
		lo, hi, ok := strings.Cut(rest, ":")
		a, okA := num(lo)
		b, okB := num(hi)
		if !ok || !okA || !okB || a > b {
			return Sampling{}, bad
		}
		return Sampling{a, b}, nil
	}
	v, ok := num(t)
	if !ok {
		return Sampling{}, bad
	}
	return Sampling{v, v}, nil
}

// Draw is the value for a request: the constant, or a uniform draw.
func (s Sampling) Draw(r *rand.Rand) float64 {
	if s.Hi == s.Lo {
		return s.Lo
	}
	return s.Lo + (s.Hi-s.Lo)*r.Float64()
}

// String is the canonical form, which ParseSampling reads back.
func (s Sampling) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	if s.Lo == s.Hi {
		return f(s.Lo)
	}
	return "uniform:" + f(s.Lo) + ":" + f(s.Hi)
}
