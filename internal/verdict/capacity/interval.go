package capacity

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/spate-dev/spate/result"
)

// IntervalConfidence is the level of the capacity's confidence interval.
const IntervalConfidence = 0.95

// The grids the interval's posterior is summed over: the capacity in
// steps of intervalStep in log rate, from half the lowest rate tried to
// twice the highest; the spread of the pass curve over spreadSteps values
// from minSpread to maxSpread (in log rate: relative to the rate); and the
// lapses.
const (
	intervalStep           = 0.01
	spreadSteps            = 16
	minSpread, maxSpread   = 0.005, 0.5
	logFloor               = -700 // log of a probability too small to matter
	intervalWidenedWarning = "the confidence interval runs past half the lowest rate tried or twice the highest: it is wider than shown"
)

// interval is the confidence interval of the capacity, the rate at which
// trials pass as often as they fail, from the pass/fail of every judged
// trial of the search. A trial at rate r is taken to pass with chance
// (1 − lapse) Φ((log μ − log r) / spread): a pass curve falling as
// steeply as the trials' noise lets it, some trials failing whatever the
// rate (lapses: a TTFT that grows by chance, a hiccup of the machine). The
// curve's parameters are uniform a priori over the grid (in the logs of
// μ and the spread), and the interval holds the central IntervalConfidence
// of the posterior of the rate at which the curve passes half the trials;
// the estimate is its median. A noisy knee, where trials at neighbouring
// rates pass and fail, widens it; trials that all agree on each side of a
// narrow bracket leave it somewhat wider than the bracket, never
// zero-width. Its coverage is measured over seeded searches of simulated
// servers (TestIntervalCoverage). It needs a trial that passed and one
// that failed; warn is set when a noticeable part of the posterior lies
// past the grid.
func interval(tallies map[float64]tally) (iv *result.CapacityInterval, warn string) {
	lo, hi := math.Inf(1), 0.0
	anyPass, anyFail := false, false
	for r, t := range tallies {
		if t.n == 0 {
			continue
		}
		lo, hi = math.Min(lo, r), math.Max(hi, r)
		anyPass = anyPass || t.passed > 0
		anyFail = anyFail || t.passed < t.n
	}
	if !anyPass || !anyFail || hi <= lo {
		return nil, ""
	}
	a, b := math.Log(lo/2), math.Log(2*hi) // beyond the rates tried, where the curve may still cross 1/2
	n := int(math.Ceil((b-a)/intervalStep)) + 1
	step := (b - a) / float64(n-1)
	// The log posterior of each cell of the grid, summed below into the
	// rate at which the cell's curve passes half of its trials.
	type cell struct {
		ll   float64
		half int
	}
	cells := make([]cell, 0, n*spreadSteps*len(lapses))
	for i := range n {
		mu := a + float64(i)*step
		for j := range spreadSteps {
			sd := minSpread * math.Pow(maxSpread/minSpread, float64(j)/float64(spreadSteps-1))
			for _, lapse := range lapses {
				ll := 0.0
				for r, t := range tallies {
					p := (1 - lapse) * 0.5 * math.Erfc(-(mu-math.Log(r))/sd/math.Sqrt2)
					ll += float64(t.passed)*logOf(p) + float64(t.n-t.passed)*logOf(1-p)
				}
				// (1 − lapse) Φ(z) = 1/2 at z = Φ⁻¹(1/(2(1 − lapse))).
				half := int(math.Round((mu - sd*distuv.UnitNormal.Quantile(0.5/(1-lapse)) - a) / step))
				cells = append(cells, cell{ll, half})
			}
		}
	}
	top := math.Inf(-1)
	for _, c := range cells {
		top = math.Max(top, c.ll)
	}
	post := make([]float64, n)
	total, outside := 0.0, 0.0
	for _, c := range cells {
		w := math.Exp(c.ll - top)
		total += w
		if c.half < 0 || c.half >= n {
			outside += w
		}
		post[min(max(c.half, 0), n-1)] += w
	}
	tail := (1 - IntervalConfidence) / 2
	from, to, mid := -1, -1, -1
	cum := 0.0
	for i, p := range post {
		cum += p / total
		if from < 0 && cum >= tail {
			from = i
		}
		if mid < 0 && cum >= 0.5 {
			mid = i
		}
		if to < 0 && cum >= 1-tail {
			to = i
		}
	}
	rate := func(i int) float64 { return math.Exp(a + float64(i)*step) }
	if outside/total > tail/10 {
		warn = intervalWidenedWarning
	}
	return &result.CapacityInterval{LowRPS: rate(from), HighRPS: rate(to), EstimateRPS: rate(mid), Confidence: IntervalConfidence}, warn
}

// lapses are the fractions of trials that may fail whatever the rate (a
// TTFT that grows for a few seconds by chance, a hiccup of the machine):
// the pass curve levels off under 1 below its knee.
var lapses = []float64{0, 0.15, 0.3}

func logOf(p float64) float64 {
	if p <= 0 {
		return logFloor
	}
	return math.Max(math.Log(p), logFloor)
}

var credibleLevel = 0.99
