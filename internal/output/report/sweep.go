package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/output/headline"
	"github.com/spate-dev/spate/result"
)

// Sweep writes one line per scenario of a run whose stages raise the load,
// with whether its measurement was valid, and names the knee: the highest
// load that still met the SLO for at least minGoodput of requests on a
// valid measurement. Stages above the knee that met the SLO but were not
// valid measurements are named on the knee line, worded as the Markdown
// and HTML reports word it (package headline).
func Sweep(w io.Writer, r *result.Result, minGoodput float64) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\toffered req/s\tsent req/s\tdone req/s\tout tok/s\tTTFT p50\tTTFT p99\tTPOT p50\tgoodput\tvalid\t")
	for _, sc := range r.Scenarios {
		m := sc.Metrics
		valid := "yes"
		if !sc.Load.Valid {
			valid = "no (" + sc.Load.InvalidCause + ")"
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.2f\t%.2f\t%.0f\t%.0f ms\t%.0f ms\t%.1f ms\t%.0f %%\t%s\t\n", sc.Name, sc.Load.TargetRate,
			sc.Load.AchievedRate, sc.Throughput.RequestsPerS, sc.Throughput.OutputTokensPerS, m[metrics.TTFT].P50, m[metrics.TTFT].P99,
			m[metrics.TPOT].P50, 100*sc.Goodput.Fraction, valid)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "knee: %s\n", headline.Knee(r.Scenarios, minGoodput).Meaning)
	return err
}
