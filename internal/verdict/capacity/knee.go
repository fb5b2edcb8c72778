package capacity

import (
	"time"

	"github.com/spate-dev/spate/result"
)

// Knee returns the index of the highest-load stage, of stages given in
// order of rising load, that passes capacity's rule (Assess) with the
// goodput target: a valid measurement, the server completing what it was
// sent over the stage's steady seconds (within the counts' sampling
// noise), requests in flight not growing, TTFT not growing, and goodput
// met at both ends of its measurement error. It returns -1 when none
// passed, and every stage's assessment (why each failed, or could not
// tell). A stage the server did not keep up with is never the knee,
// whatever its goodput: requests it had not answered when the stage
// ended are the queue the next minute at that load would serve late.
// Closed-loop stages are judged on goodput and TTFT growth only (they
// are sent what completes).
func Knee(scs []result.Scenario, goodput float64) (int, []Assessment) {
	as := make([]Assessment, len(scs))
	knee := -1
	var service time.Duration
	for i := range scs {
		sc := &scs[i]
		rate := 0.0
		if sc.Load.Mode != "closed" {
			rate = sc.Load.TargetRate
		}
		c := Criteria{Goodput: goodput, ServiceTime: service}
		if w, err := time.ParseDuration(sc.Load.Warmup); err == nil {
			c.Warmup = w
		}
		as[i] = Assess(sc, rate, c)
		if as[i].Pass {
			knee = i
			if service == 0 {
				service = FastestE2E(sc)
			}
		}
	}
	return knee, as
}
