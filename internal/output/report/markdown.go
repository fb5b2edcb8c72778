package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/output/headline"
	"github.com/spate-dev/spate/internal/verdict"
	"github.com/spate-dev/spate/result"
)

// Markdown writes a short summary of r for a pull-request comment: the
// verdict, the knee of a run of rising load or the capacity of a capacity
// search (package headline) with what it means, a table of stages marking
// the stages it comes from, the thresholds and what a reader should
// know. Strings from the result are escaped for Markdown tables.
func Markdown(w io.Writer, r *result.Result) error {
	var b strings.Builder
	n, failed := 0, 0
	for _, sc := range r.Scenarios {
		for _, o := range sc.Thresholds {
			n++
			if !o.Pass && !o.Unjudged {
				failed++
			}
		}
	}
	switch {
	case r.Interrupted || r.Verdict == verdict.Error:
		// Whatever its thresholds say, the run did not complete (exit 1).
		b.WriteString("### spate: ⚠️ INCOMPLETE (the run did not complete)")
	case n == 0:
		b.WriteString("### spate: no thresholds")
	case r.ThresholdsPassed:
		fmt.Fprintf(&b, "### spate: ✅ PASS (%d threshold%s)", n, plural(n))
	case !verdict.Failed(r):
		k := len(verdict.Unjudged(r))
		fmt.Fprintf(&b, "### spate: ❔ CANNOT JUDGE (%d of %d threshold%s could not be judged)", k, n, plural(n))
	default:
		fmt.Fprintf(&b, "### spate: ❌ FAIL (%d of %d threshold%s failed)", failed, n, plural(n))
		if r.Aborted != "" {
			fmt.Fprintf(&b, " · stopped: %s", cell(r.Aborted))
		}
	}
	// A verdict on a measurement the generator could not keep is not to
	// be trusted: say so where it is read first.
	invalid := 0
	for _, sc := range r.Scenarios {
		if !sc.Load.Valid {
			invalid++
		}
	}
	if invalid > 0 {
		fmt.Fprintf(&b, " · ⚠️ measurement not valid in %d of %d stage%s", invalid, len(r.Scenarios), plural(len(r.Scenarios)))
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "model `%s` · fingerprint `%s` · %d stage%s · spate %s\n\n",
		code(orDash(r.Provenance.Model)), code(orDash(r.Fingerprint)), len(r.Scenarios), plural(len(r.Scenarios)), code(orDash(r.SpateVersion)))
	// The knee, or the capacity, leads: what the run found, then the
	// stage table marks the stages it comes from.
	hl, ok := headline.Of(r, headline.MinGoodput)
	mark := ok && len(hl.Marked) > 0
	if ok {
		fmt.Fprintf(&b, "#### %s\n\n%s\n\n", line(hl.Title()), line(hl.Sentence()))
	}
	b.WriteString("| stage | offered | sent/s | valid | requests | failed | TTFT p50 | TTFT p99 | TPOT p50 | E2E p99 | out tok/s | goodput |")
	if mark {
		fmt.Fprintf(&b, " %s |", hl.Kind)
	}
	b.WriteString("\n|---|--:|--:|:-:|--:|--:|--:|--:|--:|--:|--:|--:|")
	if mark {
		b.WriteString(":-:|")
	}
	b.WriteString("\n")
	for i := range r.Scenarios {
		sc := &r.Scenarios[i]
		valid := "yes"
		if !sc.Load.Valid {
			valid = "**no**"
		}
		tpot, outTPS := mdMS(sc, metrics.TPOT, 50), fmt.Sprintf("%.1f", sc.Throughput.OutputTokensPerS)
		if tr := sc.Tokens.UsageTrusted; tr != nil && !*tr {
			// The server's word, not measured (see the stage's warning).
			tpot, outTPS = tpot+" (untrusted usage)", outTPS+" (untrusted usage)"
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f | %s | %d | %d | %s | %s | %s | %s | %s | %s |",
			cell(sc.Name), offered(sc), sc.Load.AchievedRate, valid, sc.Requests.Total, sc.Requests.Failed,
			mdMS(sc, metrics.TTFT, 50), mdMS(sc, metrics.TTFT, 99), tpot, mdMS(sc, metrics.E2E, 99),
			outTPS, goodputCell(r, sc))
		switch {
		case mark && hl.IsMarked(i):
			fmt.Fprintf(&b, " **◀ %s** |", hl.Kind)
		case mark:
			b.WriteString("  |")
		}
		b.WriteString("\n")
	}
	if n > 0 {
		b.WriteString("\n| stage | threshold | observed | result |\n|---|---|--:|:-:|\n")
		for _, sc := range r.Scenarios {
			for _, o := range sc.Thresholds {
				val, res := fmt.Sprintf("%.4g", o.Value), "✅ pass"
				if o.Low != nil && o.High != nil {
					val += fmt.Sprintf(" (true value in [%.4g, %.4g])", *o.Low, *o.High)
				}
				if o.Interval != nil {
					val += fmt.Sprintf(" · %.0f %% interval [%.4g, %.4g]", 100*metrics.IntervalLevel, o.Interval.Low, o.Interval.High)
				}
				switch {
				case o.Unjudged:
					val, res = cell(o.Err), "❔ cannot judge"
				case o.Err != "":
					val, res = cell(o.Err), "⚠️ error"
				case !o.Pass:
					res = "❌ fail"
				}
				fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", cell(sc.Name), codeCell(o.Expr), val, res)
			}
		}
	}
	var notes []string
	for _, sc := range r.Scenarios {
		if !sc.Load.Valid {
			notes = append(notes, fmt.Sprintf("stage %s: measurement not valid: %s", sc.Name, orDash(sc.Load.InvalidReason)))
		}
		if t := metrics.ErrorText(sc.MeasurementError); t != "" {
			notes = append(notes, fmt.Sprintf("stage %s: measurement error: %s; every threshold judged at both ends", sc.Name, t))
		}
		if t := metrics.IntervalText(sc.Intervals); t != "" {
			notes = append(notes, fmt.Sprintf("stage %s: sampling intervals, %s", sc.Name, t))
		}
		if t := PhasesText(sc.Load.HTTPPhases); t != "" {
			notes = append(notes, fmt.Sprintf("stage %s: HTTP phases %s", sc.Name, t))
		}
		errs := make([]string, 0, len(sc.Requests.Errors))
		for k, v := range sc.Requests.Errors {
			errs = append(errs, fmt.Sprintf("%s %d", k, v))
		}
		sort.Strings(errs)
		if len(errs) > 0 {
			notes = append(notes, fmt.Sprintf("stage %s: errors: %s", sc.Name, strings.Join(errs, ", ")))
		}
		for _, w := range sc.Warnings {
			notes = append(notes, fmt.Sprintf("stage %s: %s", sc.Name, w))
		}
		if t := answersText(&sc); t != "" {
			notes = append(notes, fmt.Sprintf("stage %s: answers: %s", sc.Name, t))
		}
		if t := iceText(&sc); t != "" {
			notes = append(notes, fmt.Sprintf("stage %s: ICE %s", sc.Name, t))
		}
		if t := metrics.EnergyText(sc.Server); t != "" {
			notes = append(notes, fmt.Sprintf("stage %s: energy: %s", sc.Name, t))
		}
		if sc.Output != nil {
			for _, w := range sc.Output.Warnings {
				notes = append(notes, fmt.Sprintf("stage %s: answers: %s", sc.Name, w))
			}
		}
		if sc.ICE != nil {
			for _, w := range sc.ICE.Warnings {
				notes = append(notes, fmt.Sprintf("stage %s: ICE: %s", sc.Name, w))
			}
		}
	}
	if r.Interrupted {
		notes = append(notes, "interrupted: the result holds what was measured until then")
	}
	if r.Aborted != "" {
		notes = append(notes, "aborted: "+r.Aborted)
	}
	notes = append(notes, r.Warnings...)
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, s := range notes {
			fmt.Fprintf(&b, "- %s\n", line(s))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// offered is the load a stage asked for.
func offered(sc *result.Scenario) string {
	switch {
	case sc.Load.Mode == "closed" && sc.Load.Concurrency > 0:
		return fmt.Sprintf("concurrency %d", sc.Load.Concurrency)
	case sc.Load.TargetRate > 0:
		return fmt.Sprintf("%.4g/s", sc.Load.TargetRate)
	case sc.Load.TargetTokenRate > 0:
		return fmt.Sprintf("%.4g tokens/s", sc.Load.TargetTokenRate)
	}
	return "-"
}

// mdMS is a percentile of a stage's metric in ms, "-" when not measured.
func mdMS(sc *result.Scenario, key string, p int) string {
	d, ok := sc.Metrics[key]
	if !ok || d.Count == 0 {
		return "-"
	}
	v := d.P50
	if p == 99 {
		v = d.P99
	}
	return fmt.Sprintf("%.1f ms", v)
}

// line makes s one line of Markdown text.
func line(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}

// cell makes s safe in a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(line(s), "|", `\|`) }

// codeCell makes s safe in a `code span` in a table cell: inside code,
// GitHub shows < and > as they are, and \| as a pipe.
func codeCell(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "|", `\|`).Replace(s)
	return code(s)
}

// code makes s safe inside a `code span`.
func code(s string) string { return strings.ReplaceAll(s, "`", "'") }

// goodputCell is a stage's goodput as its thresholds judge it: from the
// intended send time on an open loop, with the figure from the send beside
// it when the two differ.
func goodputCell(r *result.Result, sc *result.Scenario) string {
	f, _, intended := r.JudgedGoodput(sc)
	if !intended || math.Abs(f-sc.Goodput.Fraction) <= 0.01 {
		return fmt.Sprintf("%.1f %%", 100*sc.Goodput.Fraction)
	}
	return fmt.Sprintf("%.1f %% from the intended send time (%.1f %% from the send)", 100*f, 100*sc.Goodput.Fraction)
}
