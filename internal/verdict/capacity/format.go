package capacity

import (
	"fmt"
	"io"
	"strings"

	"github.com/spate-dev/spate/result"
)

// WriteTrial writes one line about a finished trial: its load, what was
// delivered, goodput, TTFT p99 and the verdict.
func WriteTrial(w io.Writer, n int, l Load, sc *result.Scenario, c Criteria) error {
	ok, reason := Judge(sc, l.Rate, c)
	verdict := "pass"
	switch {
	case l.Concurrency > 0:
		verdict = "closed loop: the top of the sweep"
	case !ok:
		verdict = "FAIL (" + reason + ")"
	}
	load := fmt.Sprintf("%.4g req/s", l.Rate)
	if l.Concurrency > 0 {
		load = fmt.Sprintf("concurrency %d", l.Concurrency)
	}
	_, err := fmt.Fprintf(w, "trial %2d  %-16s achieved %7.2f req/s  goodput %6.2f %%  ttft p99 %8.1f ms  %s\n",
		n, load, sc.Load.AchievedRate, 100*sc.Goodput.Fraction, sc.Metrics["ttft_ms"].P99, verdict)
	return err
}

// WriteSummary writes the outcome of a search: the capacity and its
// interval, the goodput spread of repeats, the closed-loop top of a sweep,
// saturation and warnings.
func WriteSummary(w io.Writer, c *result.Capacity) error {
	var b strings.Builder
	switch {
	case c.RateRPS == 0:
		fmt.Fprintf(&b, "capacity: below %.4g req/s (the lowest rate tried failed)\n", c.HighRPS)
	case c.HighRPS == 0:
		fmt.Fprintf(&b, "capacity: at least %.4g req/s (the highest rate tried passed)\n", c.RateRPS)
	default:
		fmt.Fprintf(&b, "capacity: %.4g req/s at goodput ≥ %.0f %% — interval [%.4g, %.4g) req/s (±%.1f %%)\n",
			c.RateRPS, 100*c.GoodputTarget, c.LowRPS, c.HighRPS, 100*c.Resolution/2)
	}
	if c.Repeats > 1 {
		fmt.Fprintf(&b, "goodput at the capacity over %d trials: %.2f–%.2f %%\n", c.Repeats, 100*c.GoodputMin, 100*c.GoodputMax)
	}
	if c.ClosedLoopMaxRPS > 0 {
		fmt.Fprintf(&b, "closed-loop throughput at concurrency %d: %.4g req/s\n", c.Concurrency, c.ClosedLoopMaxRPS)
	}
	if c.Saturated {
		fmt.Fprintf(&b, "saturated: %s\n", c.SaturationReason)
	}
	for _, warn := range c.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
