package compare

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// welch is the outcome of Welch's unequal-variances t-test.
type welch struct {
	Diff   float64 // mean(b) − mean(a)
	P      float64 // two-sided
	DF     float64
	Lo, Hi float64 // confidence interval of Diff at 1−alpha
}

// welchTest runs Welch's t-test of mean(b) = mean(a) and gives the
// 1−alpha confidence interval of the difference. Both samples need at
// least 2 values.
func welchTest(a, b []float64, alpha float64) welch {
	return welchInflated(a, b, alpha, 1, 1)
}

// welchInflated is Welch's t-test with each side's variance of the mean
// multiplied by its inflation factor (autocorrelated windows: see
// inflation); the degrees of freedom use the effective sample sizes.
func welchInflated(a, b []float64, alpha, infA, infB float64) welch {
	ma, va := stat.MeanVariance(a, nil)
	mb, vb := stat.MeanVariance(b, nil)
	na, nb := float64(len(a))/infA, float64(len(b))/infB
	sa, sb := va/na, vb/nb
	na, nb = max(na, 2), max(nb, 2)
	se := math.Sqrt(sa + sb)
	w := welch{Diff: mb - ma, P: 1}
	if se == 0 {
		// No spread at all: any difference is certain.
		if w.Diff != 0 {
			w.P = 0
		}
		w.Lo, w.Hi, w.DF = w.Diff, w.Diff, na+nb-2
		return w
	}
	w.DF = (sa + sb) * (sa + sb) / (sa*sa/(na-1) + sb*sb/(nb-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: w.DF}
	w.P = 2 * t.CDF(-math.Abs(w.Diff/se))
	q := t.Quantile(1 - alpha/2)
	w.Lo, w.Hi = w.Diff-q*se, w.Diff+q*se
	return w
}

// blockLen is the moving-block length for n consecutive windows:
// about n^(1/3), the usual rate for the variance of a mean.
func blockLen(n int) int {
	return max(1, int(math.Round(math.Cbrt(float64(n)))))
}

// resampler draws moving-block bootstrap means of a side made of one or
// more runs: blocks of consecutive windows never cross runs, and each run
// keeps its own number of windows.
type resampler struct {
	runs [][]float64
}

// mean returns the mean of one moving-block resample.
func (r resampler) mean(rng *rand.Rand) float64 {
	var sum float64
	var n int
	for _, xs := range r.runs {
		if len(xs) == 0 {
			continue
		}
		l := min(blockLen(len(xs)), len(xs))
		starts := len(xs) - l + 1
		for got := 0; got < len(xs); {
			s := rng.IntN(starts)
			for j := s; j < s+l && got < len(xs); j++ {
				sum += xs[j]
				got++
				n++
			}
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// percentileCI returns the alpha/2 and 1−alpha/2 percentiles of xs
// (sorted in place) and the two-sided bootstrap p-value of 0.
func percentileCI(xs []float64, alpha float64) (lo, hi, p float64) {
	slices.Sort(xs)
	n := len(xs)
	lo = xs[int(math.Floor(alpha/2*float64(n-1)))]
	hi = xs[int(math.Ceil((1-alpha/2)*float64(n-1)))]
	below, above := 0, 0
	for _, x := range xs {
		if x <= 0 {
			below++
		}
		if x >= 0 {
			above++
		}
	}
	p = min(1, 2*float64(min(below, above)+1)/float64(n+1))
	return lo, hi, p
}

func flatten(runs [][]float64) []float64 {
	var out []float64
	for _, r := range runs {
		out = append(out, r...)
	}
	return out
}
