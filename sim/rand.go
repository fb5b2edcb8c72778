package sim

import "math"

// mix64 is the splitmix64 finaliser: a fast bijective hash of a 64-bit word,
// used for counter-based (stateless, reproducible) random draws.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// unitFloat maps a random 64-bit word to [0, 1).
func unitFloat(x uint64) float64 {
	return float64(x>>11) / (1 << 53)
}

// logNormal returns median·exp(σ·z) for a standard normal draw z.
func logNormal(median float64, sigma, z float64) float64 {
	return median * math.Exp(sigma*z)
}
