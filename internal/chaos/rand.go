package chaos

import "math"

// mix64 is the splitmix64 finaliser: a bijective hash of a 64-bit word,
// used for counter-based random draws that need no shared state.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// draws yields the uniform draws of one request under one rule: the same
// seed, rule and request sequence number give the same draws.
type draws struct {
	base uint64
	i    uint64
}

func newDraws(seed int64, rule int, seq uint64) draws {
	return draws{base: mix64(uint64(seed)^0x6368616f73000000) ^ mix64(uint64(rule)<<48^seq)}
}

// u returns the next draw in [0, 1).
func (d *draws) u() float64 {
	d.i++
	return float64(mix64(d.base^mix64(d.i))>>11) / (1 << 53)
}

// normal returns a standard normal draw (Box–Muller on two uniforms).
func (d *draws) normal() float64 {
	u1, u2 := d.u(), d.u()
	if u1 == 0 {
		u1 = math.SmallestNonzeroFloat64
	}
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}
