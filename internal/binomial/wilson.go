// Package binomial holds the intervals that rest on the binomial
// distribution: the Wilson score interval spate puts around a rate of k
// events in n trials (errors, attack successes, refusals, goodput), which
// the probes, the chaos section, the resilience figures and every stage's
// goodput share, and the order-statistic ranks of a percentile's interval
// (QuantileRanks).
package binomial

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Wilson returns the Wilson score interval of k successes in n trials at
// confidence level conf: the interval of proportions p for which k/n is
// not rejected by the normal-approximation score test. Unlike the Wald
// interval it stays inside [0, 1] and is sensible at k = 0 and k = n. For
// n = 0 it returns [0, 1].
func Wilson(k, n int, conf float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	z := distuv.UnitNormal.Quantile(1 - (1-conf)/2)
	nf := float64(n)
	p := float64(k) / nf
	z2 := z * z
	den := 1 + z2/nf
	center := (p + z2/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf)) / den
	lo, hi = max(0, center-half), min(1, center+half)
	// Exact at the ends: k = 0 gives lo = 0, k = n gives hi = 1.
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return lo, hi
}
