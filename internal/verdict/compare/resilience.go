package compare

import (
	"github.com/spate-dev/spate/internal/verdict/resilience"
	"github.com/spate-dev/spate/result"
)

// resilienceMetrics are the resilience figures of a stage (docs/compare.md):
// one value a run, so they get a verdict across repeated runs only, and
// are not gated unless --gate names them.
var resilienceMetrics = []Metric{
	resilienceMetric(resilience.MSR, "", true, 0.05),
	resilienceMetric(resilience.SlopeName, "ms/s", false, 1),
	resilienceMetric(resilience.RecoveryName, "ms", false, 1000),
	resilienceMetric(resilience.ErrorSlopeName, "pp/min", false, 0.5),
}

func resilienceMetric(name, unit string, higherIsBetter bool, margin float64) Metric {
	return Metric{
		Name: name, Unit: unit, HigherIsBetter: higherIsBetter, Diff: true, MinEffect: margin,
		run: func(sc *result.Scenario) (float64, bool) {
			return resilience.Scalar(sc, name) // +Inf: never recovered (runsRow)
		},
	}
}
