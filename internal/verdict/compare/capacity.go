package compare

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	"golang.org/x/perf/benchmath"

	"github.com/spate-dev/spate/result"
)

// CapacityMetric is the row name of a capacity comparison.
const CapacityMetric = "capacity_rps"

// capacityMetric is the figure of a capacity comparison (capacityRow).
var capacityMetric = Metric{Name: CapacityMetric, Unit: "req/s", HigherIsBetter: true, MinEffect: throughputMargin}

// allCapacity says whether every result is a capacity search's.
func allCapacity(in ...[]Input) bool {
	for _, side := range in {
		for _, x := range side {
			if x.Result.Capacity == nil {
				return false
			}
		}
	}
	return true
}

// capacityRow compares the capacities found by searches: across repeated
// searches with the Mann-Whitney U test, each side's median with its 95 %
// interval; a single search a side shows its own bracket [low, high) and
// gets no verdict.
func capacityRow(s Sides, cfg Config, rng *rand.Rand) Row {
	row := newRow(capacityMetric, "mann-whitney", cfg)
	vals := func(in []Input) []float64 {
		var v []float64
		for _, x := range in {
			v = append(v, x.Result.Capacity.RateRPS)
		}
		return v
	}
	b, n := vals(s.Base), vals(s.New)
	row.NBase, row.NNew = len(b), len(n)
	bracket := func(c *result.Capacity) Value {
		v := Value{Center: c.RateRPS}
		if c.HighRPS > 0 {
			lo, hi := c.LowRPS, c.HighRPS
			v.Lo, v.Hi = &lo, &hi
		}
		return v
	}
	row.Change = change(median(b), median(n), false)
	row.ChangeLo, row.ChangeHi = row.Change, row.Change
	// A search that could not find the capacity, one that found only a
	// floor (no rate failed), or searches for different goodput targets or
	// SLOs, give no verdict.
	first := s.Base[0].Result.Capacity
	for _, x := range slices.Concat(s.Base, s.New) {
		c := x.Result.Capacity
		switch {
		case c.Inconclusive != "":
			row.Warnings = append(row.Warnings, fmt.Sprintf("%s: the search was inconclusive (%s): no verdict", x.Path, c.Inconclusive))
		case c.HighRPS <= 0:
			row.Warnings = append(row.Warnings, fmt.Sprintf("%s: no rate failed up to the search's maximum (capacity at least %.4g): no verdict; raise --max-rate", x.Path, c.RateRPS))
		case c.GoodputTarget != first.GoodputTarget || !maps.Equal(c.SLOms, first.SLOms):
			row.Warnings = append(row.Warnings, fmt.Sprintf("%s searched for another goodput target or SLO than %s: no verdict", x.Path, s.Base[0].Path))
		default:
			continue
		}
		row.Base, row.New = Value{Center: median(b)}, Value{Center: median(n)}
		return row
	}
	if len(b) < cfg.MinRuns || len(n) < cfg.MinRuns {
		if len(b) == 1 && len(n) == 1 {
			row.Base, row.New = bracket(s.Base[0].Result.Capacity), bracket(s.New[0].Result.Capacity)
			row.Method = "search bracket"
		} else {
			row.Base, row.New = Value{Center: median(b)}, Value{Center: median(n)}
		}
		row.Warnings = append(row.Warnings, fmt.Sprintf("a capacity verdict needs ≥ %d searches per side, have %d and %d", cfg.MinRuns, len(b), len(n)))
		return row
	}
	th := &benchmath.Thresholds{CompareAlpha: cfg.Alpha}
	sb, sn := benchmath.NewSample(b, th), benchmath.NewSample(n, th)
	var bw, nw []string
	row.Base, bw = summary(sb)
	row.New, nw = summary(sn)
	row.Change = change(row.Base.Center, row.New.Center, false)
	row.Warnings = append(append(row.Warnings, bw...), nw...)
	c := benchmath.AssumeNothing.Compare(sb, sn)
	row.P = c.P
	for _, w := range c.Warnings {
		row.Warnings = append(row.Warnings, w.Error())
	}
	boots := make([]float64, 0, cfg.Resamples)
	for range cfg.Resamples {
		boots = append(boots, change(resampleMedian(b, rng), resampleMedian(n, rng), false))
	}
	row.ChangeLo, row.ChangeHi, _ = percentileCI(boots, cfg.Alpha)
	judge(&row, capacityMetric, c.P < cfg.Alpha)
	return row
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	return resampleMedianOf(s)
}
