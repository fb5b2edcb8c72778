package capacity

import (
	"fmt"
	"io"
	"strings"

	"github.com/spate-dev/spate/result"
)

// WriteTrial writes one line about a judged trial: its load, what the
// server completed, goodput, TTFT p99 and the verdict.
func WriteTrial(w io.Writer, n int, l Load, sc *result.Scenario, a Assessment) error {
	verdict := "pass"
	switch {
	case l.Concurrency > 0:
		verdict = "closed loop: the top of the sweep"
	case a.CannotTell:
		verdict = "CANNOT TELL (" + a.Reason + ")"
	case a.Reason == ReasonImprecise:
		g := sc.MeasurementError.Goodput
		verdict = fmt.Sprintf("RUN AGAIN (imprecise: responses read late put goodput anywhere in [%.1f, %.1f] %%)", 100*g.Low, 100*g.High)
	case !a.Pass:
		verdict = "FAIL (" + a.Reason + ")"
	}
	load := fmt.Sprintf("%.4g req/s", l.Rate)
	done := fmt.Sprintf("completed %7.2f req/s (%3.0f %%)", a.CompletedRPS, 100*a.Delivered)
	switch {
	case l.Concurrency > 0:
		load = fmt.Sprintf("concurrency %d", l.Concurrency)
		done = fmt.Sprintf("sent      %7.2f req/s       ", sc.Load.AchievedRate)
	case a.Reason == ReasonInvalid || a.Reason == ReasonErrors:
		done = fmt.Sprintf("completed %7s             ", "-")
	}
	_, err := fmt.Fprintf(w, "trial %2d  %-16s %s  goodput %6.2f %%  ttft p99 %8.1f ms  %s\n",
		n, load, done, 100*sc.Goodput.Fraction, sc.Metrics["ttft_ms"].P99, verdict)
	return err
}

// WriteSummary writes the outcome of a search: the capacity, the search
// bracket, the confidence interval from repeated trials, the goodput
// spread of repeats, the closed-loop top of a sweep, saturation and
// warnings; its last line is "inconclusive: ..." when the search could not
// vouch for its capacity.
func WriteSummary(w io.Writer, c *result.Capacity) error {
	var b strings.Builder
	switch {
	case c.RateRPS == 0 && c.HighRPS > 0:
		fmt.Fprintf(&b, "capacity: below %.4g req/s (the lowest rate tried failed)\n", c.HighRPS)
	case c.RateRPS == 0:
		fmt.Fprintf(&b, "capacity: none found\n")
	case c.HighRPS == 0 && c.Inconclusive != "":
		fmt.Fprintf(&b, "capacity: at least %.4g req/s (the highest rate that passed before the search stopped)\n", c.RateRPS)
	case c.HighRPS == 0:
		fmt.Fprintf(&b, "capacity: at least %.4g req/s (the highest rate tried passed)\n", c.RateRPS)
	default:
		fmt.Fprintf(&b, "capacity: %.4g req/s at goodput ≥ %.0f %% — search bracket [%.4g, %.4g) req/s (where the search stopped, resolution %.1f %%)\n",
			c.RateRPS, 100*c.GoodputTarget, c.LowRPS, c.HighRPS, 100*c.Resolution)
	}
	if iv := c.Interval; iv != nil {
		fmt.Fprintf(&b, "%.0f %% confidence interval: [%.4g, %.4g] req/s, estimate %.4g (bootstrap over %d + %d repeated trials at the bracket's ends)\n",
			100*iv.Confidence, iv.LowRPS, iv.HighRPS, iv.EstimateRPS, iv.Trials[0], iv.Trials[1])
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
	if c.Inconclusive != "" {
		fmt.Fprintf(&b, "inconclusive: %s\n", c.Inconclusive)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
