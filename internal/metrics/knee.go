package metrics

import "github.com/spate-dev/spate/result"

// Knee returns the index of the highest-load scenario, of scenarios given
// in order of rising load, that still met the SLO for at least minGoodput
// of its requests with a valid measurement, and -1 when none did.
func Knee(scs []result.Scenario, minGoodput float64) int {
	knee := -1
	for i, sc := range scs {
		if sc.Load.Valid && sc.Requests.Succeeded > 0 && sc.Goodput.Fraction >= minGoodput {
			knee = i
		}
	}
	return knee
}
