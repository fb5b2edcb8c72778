package binomial

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// exactRanks is the sample count up to which QuantileRanks sums the
// binomial distribution; past it the normal approximation (with a
// continuity correction) is within a rank of the exact ranks.
const exactRanks = 2000

// QuantileRanks returns the ranks lo ≤ hi (1-based, of n sorted samples)
// between which the population's p-quantile lies with probability at least
// conf when the samples are independent: the distribution-free
// order-statistic interval. The count of samples under the quantile is
// Binomial(n, p), so P(X(lo) ≤ q ≤ X(hi)) = F(hi−1) − F(lo−1), with each
// tail at most (1 − conf)/2. lo is 0 when no rank gives a lower end (too
// few samples for the tail), hi is n+1 when none gives an upper end.
func QuantileRanks(n int, p, conf float64) (lo, hi int) {
	if n <= 0 {
		return 0, 1
	}
	tail := (1 - conf) / 2
	if n > exactRanks {
		z := distuv.UnitNormal.Quantile(1 - tail)
		mid, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
		lo = int(math.Floor(mid - z*sd + 0.5))
		hi = int(math.Ceil(mid+z*sd-0.5)) + 1
		return max(lo, 0), min(hi, n+1)
	}
	b := distuv.Binomial{N: float64(n), P: p}
	// lo: the largest rank r with P(B ≤ r−1) ≤ tail.
	for r := 1; r <= n && b.CDF(float64(r-1)) <= tail; r++ {
		lo = r
	}
	// hi: the smallest rank r with P(B ≤ r−1) ≥ 1 − tail.
	hi = n + 1
	for r := n; r >= 1 && b.CDF(float64(r-1)) >= 1-tail; r-- {
		hi = r
	}
	return lo, hi
}
