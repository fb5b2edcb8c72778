package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/output/headline"
	"github.com/spate-dev/spate/internal/verdict/capacity"
	"github.com/spate-dev/spate/result"
)

// Sweep writes one line per scenario of a run whose stages raise the load,
// with what the server completed of what was sent over the stage's steady
// seconds and whether its measurement was valid, and names the knee: the
// highest load the server sustained (capacity's rule, capacity.Knee: it
// kept up with what it was sent, its queue and TTFT did not grow, and at
// least minGoodput of requests met the SLO on a valid measurement). The
// knee line says why each stage above it is not.
func Sweep(w io.Writer, r *result.Result, minGoodput float64) error {
	k, as := capacity.Knee(r.Scenarios, minGoodput)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\toffered req/s\tsent req/s\tcompleted/sent\tout tok/s\tTTFT p50\tTTFT p99\tTPOT p50\tgoodput\tvalid\t")
	for i, sc := range r.Scenarios {
		m := sc.Metrics
		valid := "yes"
		if !sc.Load.Valid {
			valid = "no (" + sc.Load.InvalidCause + ")"
		}
		kept := "-"
		if as[i].SteadyS > 0 {
			kept = fmt.Sprintf("%.0f %%", 100*as[i].Delivered)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.2f\t%s\t%.0f\t%.0f ms\t%.0f ms\t%.1f ms\t%.0f %%\t%s\t\n", sc.Name, sc.Load.TargetRate,
			sc.Load.AchievedRate, kept, sc.Throughput.OutputTokensPerS, m[metrics.TTFT].P50, m[metrics.TTFT].P99,
			m[metrics.TPOT].P50, 100*sc.Goodput.Fraction, valid)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "knee: %s\n", headline.KneeFrom(r.Scenarios, minGoodput, k, as).Meaning)
	return err
}
