package metrics

import "github.com/spate-dev/spate/result"

// Knee returns the index of the highest-load scenario, of scenarios given
// in order of rising load, that still met the SLO for at least minGoodput
// of its requests with a valid measurement, and -1 when none did. A
// scenario meets it only when the whole range of its goodput does (its
// measurement error, see Imprecise): one whose range straddles minGoodput
// is not the knee, whichever end is true.
func Knee(scs []result.Scenario, minGoodput float64) int {
	knee := -1
	for i, sc := range scs {
		if sc.Load.Valid && sc.Requests.Succeeded > 0 && goodputLow(&sc) >= minGoodput {
			knee = i
		}
	}
	return knee
}

// Imprecise says whether minGoodput lies inside the range of sc's true
// goodput (its measurement error): responses read late leave it
// undecided whether the scenario met the SLO for that share of requests.
func Imprecise(sc *result.Scenario, minGoodput float64) bool {
	me := sc.MeasurementError
	return me != nil && me.Goodput.Low < minGoodput && minGoodput <= me.Goodput.High
}

// goodputLow is the lowest sc's true goodput can be.
func goodputLow(sc *result.Scenario) float64 {
	if me := sc.MeasurementError; me != nil && me.Goodput.High > me.Goodput.Low {
		return min(me.Goodput.Low, sc.Goodput.Fraction)
	}
	return sc.Goodput.Fraction
}
