package htmlreport

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/spate-dev/spate/internal/chaos"
	"github.com/spate-dev/spate/internal/client/vector"
	"github.com/spate-dev/spate/internal/client/workflow"
	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/probe"
	"github.com/spate-dev/spate/internal/verdict/capacity"
	"github.com/spate-dev/spate/result"
)

// figureBlock is one feature section of a run (checks, resilience, chaos,
// GPU energy, vector search, workflow, probes, capacity), shown as the same text the
// console prints.
type figureBlock struct {
	Title, Text string
}

// figureBlocks renders the feature sections a run has, in stage order.
func figureBlocks(r *result.Result) []figureBlock {
	var out []figureBlock
	add := func(title string, write func(io.Writer) error) {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			b.Reset()
			fmt.Fprintf(&b, "(could not format: %v)", err)
		}
		if s := strings.TrimRight(b.String(), "\n"); s != "" {
			out = append(out, figureBlock{Title: title, Text: s})
		}
	}
	if r.Capacity != nil {
		add("Capacity", func(w io.Writer) error { return capacity.WriteSummary(w, r.Capacity) })
	}
	vectors, workflows := false, false
	for i := range r.Scenarios {
		sc := &r.Scenarios[i]
		if c := sc.Checks; c != nil {
			add("Answer checks · "+sc.Name, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "%d of %d answers passed their checks (%.1f %%) · sTPS %.2f tasks/s (checked %.2f)", c.Passed, c.Checked, 100*c.PassRate, sc.Throughput.STPS, c.STPSChecked)
				return err
			})
		}
		if rs := sc.Resilience; rs != nil {
			add("Resilience · "+sc.Name, func(w io.Writer) error { return writeResilience(w, rs) })
		}
		if sc.Chaos != nil {
			add("Chaos · "+sc.Name, func(w io.Writer) error { return chaos.WriteSummary(w, sc.Name, sc.Chaos) })
		}
		if t := metrics.EnergyText(sc.Server); t != "" {
			add("GPU energy · "+sc.Name, func(w io.Writer) error { _, err := io.WriteString(w, t); return err })
		}
		if sc.Probes != nil {
			add("Security probes · "+sc.Name, func(w io.Writer) error { return probe.WriteFigures(w, sc.Name, sc.Probes) })
		}
		vectors = vectors || sc.Vector != nil
		workflows = workflows || sc.Workflow != nil
	}
	if vectors {
		add("Vector search: recall and latency per stage", func(w io.Writer) error { return vector.WriteFrontier(w, r.Scenarios) })
	}
	if workflows {
		add("Workflow steps", func(w io.Writer) error { return workflow.WriteSteps(w, r.Scenarios) })
	}
	return out
}

// writeResilience writes the slopes and recoveries of a stage.
func writeResilience(w io.Writer, r *result.Resilience) error {
	var b strings.Builder
	slope := func(name string, v *float64) {
		if v != nil {
			fmt.Fprintf(&b, "%s p99 slope %+.2f ms/s (median over %d windows of %d s)\n", name, *v, r.SlopeWindows, r.SlopeWindowS)
		}
	}
	slope("TTFT", r.TTFTp99SlopeMSPerS)
	slope("E2E", r.E2Ep99SlopeMSPerS)
	for _, rc := range r.Recoveries {
		fmt.Fprintf(&b, "recovery after %s at %.0f s: %s\n", rc.Event, rc.AtS, recoveryText(rc))
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func recoveryText(rc result.Recovery) string {
	switch {
	case rc.Unmeasured:
		return fmt.Sprintf("cannot tell: the %.0f s watched end less than a window after the last second over", rc.RecoveryS)
	case !rc.Recovered:
		return fmt.Sprintf("not recovered within the %.0f s watched", rc.RecoveryS)
	}
	return fmt.Sprintf("%.0f s", rc.RecoveryS)
}
