// Package report formats results for people and tools: the console
// summary, Markdown, JUnit XML, CSV of the per-second series and of the
// records, the sweep table, and (through htmlreport) the HTML page; Write
// and WriteFile are what spate report and a run's report outputs use.
//
// Stage: outputs.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/internal/verdict"
	"github.com/spate-dev/spate/result"
)

// rows are the latency lines of the summary table, in order.
var rows = []struct{ key, label string }{
	{metrics.TTFT, "TTFT"},
	{metrics.TTFTIntended, "TTFT (intended)"},
	{metrics.FirstReasoning, "first reasoning"},
	{metrics.FirstAnswer, "first answer"},
	{metrics.ITL, "ITL"},
	{metrics.TPOT, "TPOT"},
	{metrics.E2E, "E2E"},
	{metrics.E2EIntended, "E2E (intended)"},
}

// Console writes a plain-text summary of r: each stage, then the run's
// notes, and last the verdict lines: thresholds (when there are any), then
// whether the measurement is valid.
func Console(w io.Writer, r *result.Result) error {
	var b strings.Builder
	for i := range r.Scenarios {
		scenario(&b, r, &r.Scenarios[i])
	}
	if r.Interrupted {
		b.WriteString("interrupted: the result holds what was measured until then\n")
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", scrub.Text(w, 2000))
	}
	if r.Aborted != "" {
		fmt.Fprintf(&b, "aborted: %s\n", r.Aborted)
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", scrub.Text(r.Error, 1000))
	}
	if r.Provenance.API == "http" {
		fmt.Fprintf(&b, "api http · fingerprint %s\n", r.Fingerprint)
	} else {
		// The model id is the server's: printed escaped, never raw.
		fmt.Fprintf(&b, "model %s · fingerprint %s\n", scrub.Text(orDash(r.Provenance.Model), 200), r.Fingerprint)
	}
	n := 0
	for _, sc := range r.Scenarios {
		n += len(sc.Thresholds)
	}
	if n > 0 {
		v := "PASS"
		switch {
		case r.ThresholdsPassed:
		case verdict.Failed(r):
			v = "FAIL"
		default:
			v = fmt.Sprintf("CANNOT JUDGE (%d could not be judged: no trustworthy verdict)", len(verdict.Unjudged(r)))
		}
		fmt.Fprintf(&b, "thresholds: %s\n", v)
	}
	measurement(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// measurement writes the last verdict line: whether every measured stage
// was valid, and the cause of each that was not.
func measurement(b *strings.Builder, r *result.Result) {
	if len(r.Scenarios) == 0 {
		return
	}
	var empty []string
	for _, sc := range r.Scenarios {
		if sc.Requests.Succeeded == 0 {
			empty = append(empty, sc.Name)
		}
	}
	bad := verdict.InvalidStages(r)
	if len(empty) > 0 && len(bad) == 0 {
		fmt.Fprintf(b, "measurement: none: no request succeeded in stage %s\n", strings.Join(empty, ", "))
		return
	}
	if len(bad) == 0 {
		b.WriteString("measurement: valid")
		if w, what := widestError(r); w > 0 {
			fmt.Fprintf(b, ", imprecise by up to %.1f ms (%s, responses read late; every verdict judged at both ends)", w, what)
		}
		b.WriteString("\n")
		return
	}
	note := ", accepted by allowInvalid (exit 0)"
	for _, sc := range bad {
		if !verdict.Accepted(sc, r.Config.AllowInvalid) {
			note = ": no trustworthy verdict"
		}
	}
	fmt.Fprintf(b, "measurement: INVALID (%s)%s\n", verdict.Causes(bad), note)
}

// num prints a rate with four significant digits, in plain notation.
func num(v float64) string {
	if v >= 1e4 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// loadLine describes a stage's load: the loop, the arrivals, what was
// offered and what was sent (docs/figures.md, "Load shape").
func loadLine(l result.Load) string {
	if l.Mode != "open" {
		return fmt.Sprintf("closed loop, %d concurrent (%s req/s sent)", l.Concurrency, num(l.AchievedRate))
	}
	var load string
	switch {
	case l.TargetTokenRate > 0:
		served := "served: not measured, a success had no token count"
		if l.ServedTokenSource != "" {
			served = fmt.Sprintf("served %s, measured from %s", num(l.ServedTokenRate), l.ServedTokenSource)
		}
		load = fmt.Sprintf("open loop, %s %s %s tokens/s (offered %s, estimated from prompt tokens and max_tokens; %s; %s req/s)", l.Arrival, num(l.TargetTokenRate), l.TokenRateBasis, num(l.AchievedTokenRate), served, num(l.AchievedRate))
	case l.Arrival == "trace":
		load = fmt.Sprintf("open loop, trace replay (scheduled %s req/s, sent %s)", num(l.ScheduledRate), num(l.AchievedRate))
	case l.RampFrom > 0:
		load = fmt.Sprintf("open loop, %s ramp %s→%s req/s (sent %s)", l.Arrival, num(l.RampFrom), num(l.TargetRate), num(l.AchievedRate))
	default:
		load = fmt.Sprintf("open loop, %s %s req/s (sent %s)", l.Arrival, num(l.TargetRate), num(l.AchievedRate))
	}
	if l.Shaped {
		load += ", shaped by complexity"
	}
	if l.MaxConcurrency > 0 {
		load += fmt.Sprintf(", max %d in flight", l.MaxConcurrency)
	}
	return load
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func scenario(b *strings.Builder, r *result.Result, sc *result.Scenario) {
	api := r.Provenance.API
	l := sc.Load
	fmt.Fprintf(b, "── %s ── %s, %.1f s\n", sc.Name, loadLine(l), sc.DurationS)
	rq := sc.Requests
	fmt.Fprintf(b, "requests   %d sent, %d ok, %d failed", rq.Total, rq.Succeeded, rq.Failed)
	if rq.Cancelled > 0 {
		fmt.Fprintf(b, ", %d cancelled", rq.Cancelled)
	}
	if l.Missed > 0 {
		fmt.Fprintf(b, ", %d missed", l.Missed)
	}
	if rq.Warmup > 0 {
		fmt.Fprintf(b, " (+%d warm-up)", rq.Warmup)
	}
	if len(rq.Errors) > 0 {
		kinds := make([]string, 0, len(rq.Errors))
		for k, v := range rq.Errors {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, v))
		}
		sort.Strings(kinds)
		fmt.Fprintf(b, " [%s]", strings.Join(kinds, ", "))
	}
	b.WriteString("\n")
	t := sc.Throughput
	if api == "http" {
		fmt.Fprintf(b, "throughput %.2f req/s\n", t.RequestsPerS)
	} else {
		fmt.Fprintf(b, "throughput %.2f req/s · %.0f in + %.0f out = %.0f tok/s (output tokens from %s)\n",
			t.RequestsPerS, t.InputTokensPerS, t.OutputTokensPerS, t.TotalTokensPerS, sc.Tokens.OutputSource)
	}
	if t.DocumentsPerS > 0 {
		fmt.Fprintf(b, "documents  %.1f ranked/s\n", t.DocumentsPerS)
	}
	if d := sc.Tokens.Discrepancy; d != nil && *d > DiscrepancyShown {
		fmt.Fprintf(b, "tokens     the server's usage and the %s tokenizer differ by %.1f %% (%d requests counted both ways)\n",
			orDash(sc.Tokens.Tokenizer), 100**d, sc.Tokens.DiscrepancySampled)
	}
	if tr := sc.Tokens.UsageTrusted; tr != nil && !*tr {
		fmt.Fprintf(b, "tokens     UNTRUSTED usage: %s; output tok/s, TPOT and tokens per chunk above and below are the server's word, not measured\n", sc.Tokens.UsageUntrusted)
	}
	if g := sc.Goodput; len(g.SLOms) > 0 {
		var slo []string
		for k, v := range g.SLOms {
			slo = append(slo, fmt.Sprintf("%s≤%gms", k, v))
		}
		sort.Strings(slo)
		switch {
		case math.Abs(g.Fraction-g.IntendedFraction) <= 0.01 || !r.JudgedFromIntended(sc) && g.IntendedFraction == 0:
			fmt.Fprintf(b, "goodput    %.1f %% (%.2f req/s) within %s", 100*g.Fraction, g.RequestsPerS, strings.Join(slo, " "))
		case r.JudgedFromIntended(sc):
			// The figure the thresholds judge comes first.
			fmt.Fprintf(b, "goodput    %.1f %% (%.2f req/s) within %s from the intended send time, as thresholds judge it · from the send %.1f %% (%.2f req/s)",
				100*g.IntendedFraction, g.IntendedRequestsPerS, strings.Join(slo, " "), 100*g.Fraction, g.RequestsPerS)
		default:
			fmt.Fprintf(b, "goodput    %.1f %% (%.2f req/s) within %s · from the intended send time %.1f %% (%.2f req/s)",
				100*g.Fraction, g.RequestsPerS, strings.Join(slo, " "), 100*g.IntendedFraction, g.IntendedRequestsPerS)
		}
		b.WriteString("\n")
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	// The table's header comes with its first row: none without rows.
	header := "ms\tcount\tmean\tp50\tp90\tp99\tp99.9\tmax\t\n"
	row := func(format string, a ...any) {
		fmt.Fprint(tw, header)
		header = ""
		fmt.Fprintf(tw, format, a...)
	}
	for _, r := range rows {
		d, ok := sc.Metrics[r.key]
		if !ok || d.Count == 0 {
			continue
		}
		if _, reasoning := sc.Metrics[metrics.FirstReasoning]; r.key == metrics.FirstAnswer && !reasoning {
			continue // the same as TTFT when nothing reasons first
		}
		row("%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", r.label, d.Count, d.Mean, d.P50, d.P90, d.P99, d.P999, d.Max)
	}
	if d := l.ScheduleLagMS; d.Count > 0 {
		row("schedule lag\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", d.Count, d.Mean, d.P50, d.P90, d.P99, d.P999, d.Max)
	}
	tw.Flush()
	b.WriteString(phasesLine(l.HTTPPhases))
	if d, ok := sc.Metrics[metrics.TokensPerChunk]; ok && d.Count > 0 {
		fmt.Fprintf(b, "tokens per chunk: mean %.2f, p50 %.0f, max %.0f\n", d.Mean, d.P50, d.Max)
	}
	if c := sc.Checks; c != nil {
		fmt.Fprintf(b, "checks     %d of %d answers passed (%.1f %%) · sTPS %.2f tasks/s (checked %.2f)\n", c.Passed, c.Checked, 100*c.PassRate, sc.Throughput.STPS, c.STPSChecked)
	}
	if sc.Requests.Succeeded > 0 {
		answers(b, sc) // of answers that came: none did, nothing to say of how they ended
	}
	breakdown(b, sc)
	server(b, sc.Server)
	resilience(b, sc.Resilience)
	if t := metrics.IntervalText(sc.Intervals); t != "" {
		fmt.Fprintf(b, "interval   %s\n", t)
	}
	if sc.Requests.Succeeded > 0 {
		validity(b, l)
	} else {
		b.WriteString("validity   nothing measured: no request succeeded\n")
	}
	measurementError(b, sc.MeasurementError)
	for _, th := range sc.Thresholds {
		mark := "✓"
		switch {
		case th.Unjudged:
			mark = "?"
		case !th.Pass:
			mark = "✗"
		}
		from := ""
		if th.From != "" {
			from = ", from the " + th.From + " send time"
		}
		if iv := th.Interval; iv != nil && th.Err == "" {
			from += fmt.Sprintf(", %.0f %% interval [%.4g, %.4g]", 100*metrics.IntervalLevel, iv.Low, iv.High)
		}
		switch {
		case th.Err != "":
			fmt.Fprintf(b, "  %s %s (%s)\n", mark, th.Expr, th.Err)
		case th.Trigger && th.FiredAtS != nil:
			fmt.Fprintf(b, "  %s %s (fired at %.0f s: %.4g%s)\n", mark, th.Expr, *th.FiredAtS, th.Value, from)
		case th.Low != nil && th.High != nil:
			fmt.Fprintf(b, "  %s %s (%.4g%s; true value in [%.4g, %.4g], the same verdict at both ends)\n", mark, th.Expr, th.Value, from, *th.Low, *th.High)
		default:
			fmt.Fprintf(b, "  %s %s (%.4g%s)\n", mark, th.Expr, th.Value, from)
		}
	}
	for _, w := range sc.Warnings {
		fmt.Fprintf(b, "warning: %s\n", scrub.Text(w, 2000))
	}
	if sc.Output != nil {
		for _, w := range sc.Output.Warnings {
			fmt.Fprintf(b, "warning: answers: %s\n", scrub.Text(w, 2000))
		}
	}
	if sc.ICE != nil {
		for _, w := range sc.ICE.Warnings {
			fmt.Fprintf(b, "warning: ICE: %s\n", scrub.Text(w, 2000))
		}
	}
	b.WriteString("\n")
}

// DiscrepancyShown is the usage-vs-tokenizer discrepancy over which the
// console mentions it.
const DiscrepancyShown = 0.05

// measurementError writes a stage's measurement error line
// (metrics.ErrorText).
func measurementError(b *strings.Builder, me *result.MeasurementError) {
	if t := metrics.ErrorText(me); t != "" {
		fmt.Fprintf(b, "error      %s\n", t)
	}
}

// widestError is the widest p99 range of r's measurement errors, in ms,
// and which figure of which stage it is (0 when none).
func widestError(r *result.Result) (float64, string) {
	var w float64
	var what string
	for _, sc := range r.Scenarios {
		if sc.MeasurementError == nil {
			continue
		}
		for _, row := range metrics.ErrorRows {
			fe, ok := sc.MeasurementError.Figures[row.Key]
			if d := fe.P99.High - fe.P99.Low; ok && d > w {
				w, what = d, fmt.Sprintf("%s p99 of stage %s", row.Name, sc.Name)
			}
		}
	}
	return w, what
}

// validity writes a stage's validity line: the figures the rule judged.
func validity(b *strings.Builder, l result.Load) {
	if !l.Valid {
		fmt.Fprintf(b, "validity   INVALID (%s): %s\n", l.InvalidCause, l.InvalidReason)
		return
	}
	v := l.Validity
	if v == nil { // a result from before the rule had its figures
		fmt.Fprintf(b, "validity   valid (schedule lag p99 %.2f ms, bound %.2f ms)\n", l.ScheduleLagMS.P99, l.LagBoundMS)
		return
	}
	if l.Mode != "open" {
		fmt.Fprintf(b, "validity   valid: turnaround p99 %.2f ms (bound %.2f ms)\n", v.LagP99MS, v.BoundMS)
		return
	}
	fmt.Fprintf(b, "validity   valid: arrival lag p99 %.2f ms, %d of %d sends over the %.2f ms bound", v.LagP99MS, v.LateSends, v.Sends, v.BoundMS)
	if v.RateRatio > 0 {
		fmt.Fprintf(b, ", %.1f %% of the scheduled rate", 100*v.RateRatio)
	}
	fmt.Fprintf(b, ", %d missed\n", l.Missed)
}

// breakdown writes a table per label key: requests, TTFT and E2E p50/p99,
// goodput and check pass rate of each value, values in order.
func breakdown(b *strings.Builder, sc *result.Scenario) {
	keys := make([]string, 0, len(sc.Breakdown))
	for k := range sc.Breakdown {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { // intent first, then by name
		if (keys[i] == metrics.IntentLabel) != (keys[j] == metrics.IntentLabel) {
			return keys[i] == metrics.IntentLabel
		}
		return keys[i] < keys[j]
	})
	var shown []map[string]result.Group
	for _, k := range keys {
		vals := sc.Breakdown[k]
		if sameGroups(shown, vals) {
			continue // e.g. intent set to the cluster label: one table is enough
		}
		shown = append(shown, vals)
		names := make([]string, 0, len(vals))
		for v := range vals {
			names = append(names, v)
		}
		sort.Strings(names)
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "by %s\trequests\tfailed\tTTFT p50\tTTFT p99\tE2E p50\tE2E p99\tgoodput\tchecks\t\n", k)
		for _, v := range names {
			g := vals[v]
			checks := "-"
			if g.Checks != nil {
				checks = fmt.Sprintf("%.1f %%", 100*g.Checks.PassRate)
			}
			ttft, e2e := g.Metrics[metrics.TTFT], g.Metrics[metrics.E2E]
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f %%\t%s\t\n", v, g.Requests.Total, g.Requests.Failed,
				ttft.P50, ttft.P99, e2e.P50, e2e.P99, 100*g.Goodput.Fraction, checks)
		}
		tw.Flush()
	}
}

// sameGroups reports whether vals splits the requests exactly as one of
// the tables already shown.
func sameGroups(shown []map[string]result.Group, vals map[string]result.Group) bool {
next:
	for _, s := range shown {
		if len(s) != len(vals) {
			continue
		}
		for v, g := range vals {
			o, ok := s[v]
			if !ok || o.Requests.Total != g.Requests.Total || o.Requests.Failed != g.Requests.Failed {
				continue next
			}
		}
		return true
	}
	return false
}

// server writes the system under test's own figures, when scraped, and
// its GPUs' energy.
func server(b *strings.Builder, s *result.Server) {
	if s == nil {
		return
	}
	f := s.Figures
	var parts []string
	if v, ok := f["kv_cache_usage_peak"]; ok {
		parts = append(parts, fmt.Sprintf("KV peak %.0f %% (%.0f s ≥ 99 %%)", 100*v, f["kv_cache_full_s"]))
	}
	if v, ok := f["requests_waiting_mean"]; ok {
		parts = append(parts, fmt.Sprintf("queue mean %.1f, peak %.0f", v, f["requests_waiting_peak"]))
	}
	if v, ok := f["requests_running_peak"]; ok {
		parts = append(parts, fmt.Sprintf("running peak %.0f", v))
	}
	if v, ok := f["queue_ttft_p99_pearson"]; ok {
		parts = append(parts, fmt.Sprintf("r(queue, TTFT p99) %.2f (n_eff %.1f)", v, f["queue_ttft_p99_n_eff"]))
	}
	if len(parts) > 0 {
		fmt.Fprintf(b, "server     %s\n", strings.Join(parts, " · "))
	}
	if t := metrics.EnergyText(s); t != "" {
		fmt.Fprintf(b, "energy     %s\n", t)
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(b, "warning: server metrics: %s\n", scrub.Text(w, 2000))
	}
}

// answers writes how answers ended and ICE (see answersText, iceText).
func answers(b *strings.Builder, sc *result.Scenario) {
	if t := answersText(sc); t != "" {
		fmt.Fprintf(b, "answers    %s\n", t)
	}
	if t := iceText(sc); t != "" {
		fmt.Fprintf(b, "ICE        %s\n", t)
	}
}

// answersText says how answers ended, when any was cut, dropped tokens or
// was refused for its length ("" otherwise).
func answersText(sc *result.Scenario) string {
	o := sc.Output
	if o == nil || (o.Truncated == 0 && o.DroppedTokens == 0 && o.ContextRejected == 0) {
		return ""
	}
	var parts []string
	if o.TruncationRate != nil {
		parts = append(parts, fmt.Sprintf("truncated %d (%.1f %%)", o.Truncated, 100**o.TruncationRate))
	}
	if o.TokenDropRate != nil {
		parts = append(parts, fmt.Sprintf("token drop %.1f %% of %d exact answers", 100**o.TokenDropRate, o.ExactRequests))
	}
	if o.ContextRejected > 0 {
		parts = append(parts, fmt.Sprintf("%d refused for their context length", o.ContextRejected))
	}
	return strings.Join(parts, " · ")
}

// iceText is the stage's ICE, "" when no request asked for logprobs.
func iceText(sc *result.Scenario) string {
	ice := sc.ICE
	switch {
	case ice == nil:
		return ""
	case ice.Conversations == 0:
		return fmt.Sprintf("none: no conversation had two turns with logprobs (turn entropy %.3f nats)", ice.MeanEntropy)
	}
	return fmt.Sprintf("%.3f nats mean over %d conversations (p90 %.3f, max %.3f) · turn entropy %.3f nats",
		ice.Mean, ice.Conversations, ice.P90, ice.Max, ice.MeanEntropy)
}
