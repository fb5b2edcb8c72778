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
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/scrub"
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

// Console writes a plain-text summary of r.
func Console(w io.Writer, r *result.Result) error {
	var b strings.Builder
	for i := range r.Scenarios {
		scenario(&b, &r.Scenarios[i])
	}
	verdict := "PASS"
	if !r.ThresholdsPassed {
		verdict = "FAIL"
	}
	n := 0
	for _, sc := range r.Scenarios {
		n += len(sc.Thresholds)
	}
	if n > 0 {
		fmt.Fprintf(&b, "thresholds: %s\n", verdict)
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
	// The model id is the server's: printed escaped, never raw.
	fmt.Fprintf(&b, "model %s · fingerprint %s\n", scrub.Text(orDash(r.Provenance.Model), 200), r.Fingerprint)
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func scenario(b *strings.Builder, sc *result.Scenario) {
	l := sc.Load
	load := ""
	if l.Mode == "open" {
		load = fmt.Sprintf("open loop, %s %.4g req/s (achieved %.4g)", l.Arrival, l.TargetRate, l.AchievedRate)
		if l.TargetTokenRate > 0 {
			load = fmt.Sprintf("open loop, %s %.4g %s tokens/s (achieved %.4g, %.4g req/s)", l.Arrival, l.TargetTokenRate, l.TokenRateBasis, l.AchievedTokenRate, l.AchievedRate)
		}
		if l.MaxConcurrency > 0 {
			load += fmt.Sprintf(", max %d in flight", l.MaxConcurrency)
		}
	} else {
		load = fmt.Sprintf("closed loop, %d concurrent (%.4g req/s sent)", l.Concurrency, l.AchievedRate)
	}
	fmt.Fprintf(b, "── %s ── %s, %.1f s\n", sc.Name, load, sc.DurationS)
	rq := sc.Requests
	fmt.Fprintf(b, "requests   %d sent, %d ok, %d failed", rq.Total, rq.Succeeded, rq.Failed)
	if rq.Cancelled > 0 {
		fmt.Fprintf(b, ", %d cancelled", rq.Cancelled)
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
	fmt.Fprintf(b, "throughput %.2f req/s · %.0f in + %.0f out = %.0f tok/s (output tokens from %s)\n",
		t.RequestsPerS, t.InputTokensPerS, t.OutputTokensPerS, t.TotalTokensPerS, sc.Tokens.OutputSource)
	if t.DocumentsPerS > 0 {
		fmt.Fprintf(b, "documents  %.1f ranked/s\n", t.DocumentsPerS)
	}
	if len(sc.Goodput.SLOms) > 0 {
		var slo []string
		for k, v := range sc.Goodput.SLOms {
			slo = append(slo, fmt.Sprintf("%s≤%gms", k, v))
		}
		sort.Strings(slo)
		fmt.Fprintf(b, "goodput    %.1f %% (%.2f req/s) within %s\n", 100*sc.Goodput.Fraction, sc.Goodput.RequestsPerS, strings.Join(slo, " "))
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ms\tcount\tmean\tp50\tp90\tp99\tp99.9\tmax\t")
	for _, row := range rows {
		d, ok := sc.Metrics[row.key]
		if !ok || d.Count == 0 {
			continue
		}
		if _, reasoning := sc.Metrics[metrics.FirstReasoning]; row.key == metrics.FirstAnswer && !reasoning {
			continue // the same as TTFT when nothing reasons first
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", row.label, d.Count, d.Mean, d.P50, d.P90, d.P99, d.P999, d.Max)
	}
	if d := l.ScheduleLagMS; d.Count > 0 {
		fmt.Fprintf(tw, "schedule lag\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", d.Count, d.Mean, d.P50, d.P90, d.P99, d.P999, d.Max)
	}
	tw.Flush()
	if d, ok := sc.Metrics[metrics.TokensPerChunk]; ok && d.Count > 0 {
		fmt.Fprintf(b, "tokens per chunk: mean %.2f, p50 %.0f, max %.0f\n", d.Mean, d.P50, d.Max)
	}
	if c := sc.Checks; c != nil {
		fmt.Fprintf(b, "checks     %d of %d answers passed (%.1f %%) · sTPS %.2f tasks/s (checked %.2f)\n", c.Passed, c.Checked, 100*c.PassRate, sc.Throughput.STPS, c.STPSChecked)
	}
	answers(b, sc)
	breakdown(b, sc)
	server(b, sc.Server)
	resilience(b, sc.Resilience)
	if l.Valid {
		fmt.Fprintf(b, "measurement: valid (schedule lag p99 %.2f ms ≤ %.0f ms)\n", l.ScheduleLagMS.P99, l.LagBoundMS)
	} else {
		fmt.Fprintf(b, "measurement: INVALID (%s): %s\n", l.InvalidCause, l.InvalidReason)
	}
	for _, th := range sc.Thresholds {
		mark := "✓"
		if !th.Pass {
			mark = "✗"
		}
		switch {
		case th.Err != "":
			fmt.Fprintf(b, "  %s %s (%s)\n", mark, th.Expr, th.Err)
		case th.Trigger && th.FiredAtS != nil:
			fmt.Fprintf(b, "  %s %s (fired at %.0f s: %.4g)\n", mark, th.Expr, *th.FiredAtS, th.Value)
		default:
			fmt.Fprintf(b, "  %s %s (%.4g)\n", mark, th.Expr, th.Value)
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

// server writes the system under test's own figures, when scraped.
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
