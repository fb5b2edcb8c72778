package report

import (
	"fmt"
	"strings"

	"github.com/spate-dev/spate/result"
)

// resilience writes a stage's resilience figures (docs/compare.md): the
// slopes and each recovery, with the bound it was judged against.
func resilience(b *strings.Builder, r *result.Resilience) {
	if r == nil {
		return
	}
	var slopes []string
	if v := r.E2Ep99SlopeMSPerS; v != nil {
		slopes = append(slopes, fmt.Sprintf("E2E p99 %+.2f ms/s", *v))
	}
	if v := r.TTFTp99SlopeMSPerS; v != nil {
		slopes = append(slopes, fmt.Sprintf("TTFT p99 %+.2f ms/s", *v))
	}
	if v := r.ErrorRateSlopePPPerMin; v != nil {
		slopes = append(slopes, fmt.Sprintf("error rate %+.2f pp/min", *v))
	}
	if len(slopes) > 0 {
		fmt.Fprintf(b, "resilience slope %s (median over %d windows of %d s)\n", strings.Join(slopes, ", "), r.SlopeWindows, r.SlopeWindowS)
	}
	if len(r.Recoveries) > 0 {
		bound := fmt.Sprintf("%s p99 ≤ %.4g ms", r.SLOMetric, r.SLOms)
		if r.SLOSource == "baseline" {
			bound += " (1.5 × the p99 before the first fault)"
		}
		var recs []string
		for _, rec := range r.Recoveries {
			s := fmt.Sprintf("%s at %g s: %g s", rec.Event, rec.AtS, rec.RecoveryS)
			switch {
			case rec.Unmeasured:
				s = fmt.Sprintf("%s at %g s: cannot tell (the %g s watched end less than a window after the last second over)", rec.Event, rec.AtS, rec.RecoveryS)
			case !rec.Recovered:
				s = fmt.Sprintf("%s at %g s: NOT recovered in %g s", rec.Event, rec.AtS, rec.RecoveryS)
			}
			recs = append(recs, s)
		}
		fmt.Fprintf(b, "recovery   to %s over %d s windows: %s\n", bound, r.RecoveryWindowS, strings.Join(recs, " · "))
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(b, "warning: resilience: %s\n", w)
	}
}
