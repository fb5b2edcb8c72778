package resilience

import (
	"math"

	"github.com/spate-dev/spate/result"
)

// Scalar names: the resilience figures of a stage as thresholds and
// compare know them (docs/compare.md).
const (
	// MSR is the chaos section's MSR, a fraction in [0, 1].
	MSR = "msr"
	// SlopeName is the resilience slope of E2E p99, ms/s.
	SlopeName = "resilience_slope"
	// RecoveryName is the slowest recovery after a fault's end, in ms;
	// +Inf when the stage did not recover before it ended or the next
	// fault began.
	RecoveryName = "recovery_time"
	// ErrorSlopeName is the error-rate slope, percentage points a minute.
	ErrorSlopeName = "error_rate_slope"
)

// ScalarNames lists the resilience scalars.
var ScalarNames = []string{MSR, SlopeName, RecoveryName, ErrorSlopeName}

// Scalar returns a resilience figure of a stage by name; ok is false when
// the stage has no such figure (no chaos, no fault, too short), or name is
// not one of ScalarNames.
func Scalar(sc *result.Scenario, name string) (v float64, ok bool) {
	switch name {
	case MSR:
		if sc.Chaos != nil && sc.Chaos.MSR != nil {
			return *sc.Chaos.MSR, true
		}
	case SlopeName:
		if r := sc.Resilience; r != nil && r.E2Ep99SlopeMSPerS != nil {
			return *r.E2Ep99SlopeMSPerS, true
		}
	case ErrorSlopeName:
		if r := sc.Resilience; r != nil && r.ErrorRateSlopePPPerMin != nil {
			return *r.ErrorRateSlopePPPerMin, true
		}
	case RecoveryName:
		return recoveryTime(sc.Resilience)
	}
	return 0, false
}

// recoveryTime is the slowest recovery after a fault's end, in ms.
func recoveryTime(r *result.Resilience) (float64, bool) {
	if r == nil {
		return 0, false
	}
	worst, any, unmeasured := 0.0, false, false
	for _, rec := range r.Recoveries {
		if rec.Event != "fault_end" {
			continue
		}
		any = true
		switch {
		case rec.Unmeasured:
			unmeasured = true
		case !rec.Recovered:
			return math.Inf(1), true
		}
		worst = max(worst, 1000*rec.RecoveryS)
	}
	if unmeasured {
		// A recovery the stage ended too soon to tell: no value (the
		// threshold cannot judge it), not a recovery that never came.
		return math.NaN(), true
	}
	return worst, any
}
