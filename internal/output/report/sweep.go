package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/result"
)

// Sweep writes one line per scenario of a run whose stages raise the load,
// with whether its measurement was valid, and names the knee: the highest
// load that still met the SLO for at least minGoodput of requests on a
// valid measurement. Stages above the knee that met the SLO but were not
// valid measurements are named on the knee line.
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
	k := metrics.Knee(r.Scenarios, minGoodput)
	var skipped, imprecise []string
	for i := k + 1; i < len(r.Scenarios); i++ {
		sc := r.Scenarios[i]
		switch {
		case !sc.Load.Valid && sc.Requests.Succeeded > 0 && sc.Goodput.Fraction >= minGoodput:
			skipped = append(skipped, sc.Name)
		case sc.Load.Valid && metrics.Imprecise(&sc, minGoodput):
			g := sc.MeasurementError.Goodput
			imprecise = append(imprecise, fmt.Sprintf("%s, goodput in [%.1f %%, %.1f %%]", sc.Name, 100*g.Low, 100*g.High))
		}
	}
	note := ""
	if len(skipped) > 0 {
		note = fmt.Sprintf(" (skipped %s: met the SLO but the measurement was invalid)", strings.Join(skipped, ", "))
	}
	if len(imprecise) > 0 {
		note += fmt.Sprintf(" (cannot tell %s: responses read late put the target inside its range)", strings.Join(imprecise, "; "))
	}
	if k >= 0 {
		sc := r.Scenarios[k]
		_, err := fmt.Fprintf(w, "knee: %s, %.1f req/s offered, is the most load that kept %.0f %% of requests within the SLO%s\n",
			sc.Name, sc.Load.TargetRate, 100*minGoodput, note)
		return err
	}
	_, err := fmt.Fprintf(w, "knee: no stage kept %.0f %% of requests within the SLO on a valid measurement%s\n", 100*minGoodput, note)
	return err
}
