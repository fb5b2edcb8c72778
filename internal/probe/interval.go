package probe

import (
	"github.com/spate-dev/spate/internal/binomial"
	"github.com/spate-dev/spate/result"
)

// Confidence is the level of every interval spate reports for probe rates.
const Confidence = 0.95

// rate returns k of n with its interval, or nil when n is 0.
func rate(k, n int) *result.ProbeRate {
	if n == 0 {
		return nil
	}
	lo, hi := binomial.Wilson(k, n, Confidence)
	return &result.ProbeRate{K: k, N: n, Rate: float64(k) / float64(n), Low: lo, High: hi}
}
