package workflow

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spate-dev/spate/result"
)

// WriteSteps prints, for every stage with workflow figures, a line per
// step (runs, failures, latency p50/p99/p99.9, and for a streamed step
// TTFT and ITL p50 and output tokens) and a line for the whole workflow
// with the steps that failed it.
func WriteSteps(w io.Writer, scs []result.Scenario) error {
	for _, sc := range scs {
		wf := sc.Workflow
		if wf == nil {
			continue
		}
		fmt.Fprintf(w, "── %s ── workflow %s: %d runs, %d ok, %d failed", sc.Name, wf.Name, wf.Runs, wf.Succeeded, wf.Failed)
		if len(wf.FailedAt) > 0 {
			var at []string
			for k, v := range wf.FailedAt {
				at = append(at, fmt.Sprintf("%s %d", k, v))
			}
			sort.Strings(at)
			fmt.Fprintf(w, " (at %s)", strings.Join(at, ", "))
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "step\truns\tfailed\tp50 ms\tp99 ms\tp99.9 ms\tmean ms\tttft p50\titl p50\ttokens\t\n")
		for _, s := range wf.Steps {
			ttft, itl, tokens := "-", "-", "-"
			if s.TTFTMS != nil {
				ttft, itl, tokens = fmt.Sprintf("%.2f", s.TTFTMS.P50), fmt.Sprintf("%.2f", s.ITLMS.P50), fmt.Sprint(s.OutputTokens)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t\n", s.Name, s.Runs, s.Failed, s.LatencyMS.P50, s.LatencyMS.P99, s.LatencyMS.P999, s.LatencyMS.Mean, ttft, itl, tokens)
		}
		fmt.Fprintf(tw, "(workflow)\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t\t\t\t\n", wf.Runs, wf.Failed, wf.E2EMS.P50, wf.E2EMS.P99, wf.E2EMS.P999, wf.E2EMS.Mean)
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("printing workflow steps: %w", err)
		}
	}
	return nil
}
