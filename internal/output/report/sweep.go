package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/result"
)

// Sweep writes one line per scenario of a run whose stages raise the load,
// and names the knee: the highest load that still met the SLO for at least
// minGoodput of requests.
func Sweep(w io.Writer, r *result.Result, minGoodput float64) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\toffered req/s\tsent req/s\tdone req/s\tout tok/s\tTTFT p50\tTTFT p99\tTPOT p50\tgoodput\t")
	for _, sc := range r.Scenarios {
		m := sc.Metrics
		fmt.Fprintf(tw, "%s\t%.1f\t%.2f\t%.2f\t%.0f\t%.0f ms\t%.0f ms\t%.1f ms\t%.0f %%\t\n", sc.Name, sc.Load.TargetRate,
			sc.Load.AchievedRate, sc.Throughput.RequestsPerS, sc.Throughput.OutputTokensPerS, m[metrics.TTFT].P50, m[metrics.TTFT].P99,
			m[metrics.TPOT].P50, 100*sc.Goodput.Fraction)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if k := metrics.Knee(r.Scenarios, minGoodput); k >= 0 {
		sc := r.Scenarios[k]
		_, err := fmt.Fprintf(w, "knee: %s, %.1f req/s offered, is the most load that kept %.0f %% of requests within the SLO\n",
			sc.Name, sc.Load.TargetRate, 100*minGoodput)
		return err
	}
	_, err := fmt.Fprintf(w, "knee: no stage kept %.0f %% of requests within the SLO\n", 100*minGoodput)
	return err
}
