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
	case a.WithinNoise:
		verdict = fmt.Sprintf("pass (short of %.0f %% within the noise)", 100*a.minDelivered)
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

// WriteSummary writes the outcome of a search: the capacity and the
// confidence its rate was decided at, the confidence interval, the search
// bracket, the goodput spread of repeats, the closed-loop top of a sweep,
// saturation and warnings; its last line is "inconclusive: ..." when the
// search could not vouch for its capacity. An interrupted or inconclusive
// search names no capacity: it says what its trials showed so far.
func WriteSummary(w io.Writer, c *result.Capacity) error {
	var b strings.Builder
	decided := ""
	if c.Confidence > 0 && c.RateTrials[1] > 0 {
		decided = fmt.Sprintf(", decided at %.0f %% confidence over %d trials (%d passed)", 100*c.Confidence, c.RateTrials[1], c.RateTrials[0])
	}
	switch {
	case c.Interrupted != "":
		fmt.Fprintf(&b, "no capacity: the search was interrupted (%s); so far %s\n", c.Interrupted, known(c))
	case c.Inconclusive != "":
		fmt.Fprintf(&b, "no capacity: the search is inconclusive (the last line says why); so far %s\n", known(c))
	case c.RateRPS == 0 && c.HighRPS > 0:
		fmt.Fprintf(&b, "capacity: below %.4g req/s (the lowest rate tried failed)\n", c.HighRPS)
	case c.RateRPS == 0:
		fmt.Fprintf(&b, "capacity: none found\n")
	case c.HighRPS == 0:
		fmt.Fprintf(&b, "capacity: at least %.4g req/s (the highest rate tried passed)%s\n", c.RateRPS, decided)
	default:
		fmt.Fprintf(&b, "capacity: %.4g req/s at goodput ≥ %.0f %%%s\n", c.RateRPS, 100*c.GoodputTarget, decided)
	}
	if iv := c.Interval; iv != nil && c.Interrupted == "" {
		fmt.Fprintf(&b, "%.0f %% confidence interval: [%.4g, %.4g] req/s, estimate %.4g (where trials pass half the time, from the pass/fail of %d trials)\n",
			100*iv.Confidence, iv.LowRPS, iv.HighRPS, iv.EstimateRPS, judged(c))
		if c.Inconclusive == "" && c.HighRPS > 0 {
			fmt.Fprintf(&b, "search bracket: [%.4g, %.4g) req/s (resolution %.1f %%)\n", c.LowRPS, c.HighRPS, 100*c.Resolution)
		}
	}
	if c.RateRPS > 0 && c.HighRPS > 0 && c.Interval == nil && c.Interrupted == "" && c.Inconclusive == "" {
		fmt.Fprintf(&b, "search bracket: [%.4g, %.4g) req/s (where the search stopped, resolution %.1f %%)\n", c.LowRPS, c.HighRPS, 100*c.Resolution)
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

// judged is the number of judged open-loop trials of a search.
func judged(c *result.Capacity) int {
	n := 0
	for _, tr := range c.Trials {
		if tr.Concurrency == 0 && tr.Reason != ReasonInvalid && tr.Reason != ReasonImprecise && tr.Reason != ReasonTooShort {
			n++
		}
	}
	return n
}

// known says what a search's judged trials showed: the highest rate whose
// trials mostly passed and the lowest whose trials mostly failed, with
// their counts.
func known(c *result.Capacity) string {
	type count struct{ passed, n int }
	at := map[float64]count{}
	for _, tr := range c.Trials {
		if tr.Concurrency > 0 || tr.Reason == ReasonInvalid || tr.Reason == ReasonImprecise || tr.Reason == ReasonTooShort {
			continue
		}
		k := at[tr.RateRPS]
		k.n++
		if tr.Pass {
			k.passed++
		}
		at[tr.RateRPS] = k
	}
	pass, fail := 0.0, 0.0
	for r, k := range at {
		if 2*k.passed > k.n && r > pass {
			pass = r
		}
		if 2*k.passed < k.n && (fail == 0 || r < fail) {
			fail = r
		}
	}
	var parts []string
	if pass > 0 {
		parts = append(parts, fmt.Sprintf("%.4g req/s passed (%d of %d trials)", pass, at[pass].passed, at[pass].n))
	}
	if fail > 0 {
		parts = append(parts, fmt.Sprintf("%.4g req/s failed (%d of %d trials passed)", fail, at[fail].passed, at[fail].n))
	}
	if len(parts) == 0 {
		return "no rate passed or failed"
	}
	return strings.Join(parts, ", ")
}
