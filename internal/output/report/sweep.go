package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spate-dev/spate/internal/metrics"
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
	var why []string
	for i := k + 1; i < len(r.Scenarios); i++ {
		why = append(why, r.Scenarios[i].Name+": "+KneeWhyNot(&r.Scenarios[i], as[i]))
	}
	note := ""
	if len(why) > 0 {
		note = " (" + strings.Join(why, "; ") + ")"
	}
	if k >= 0 {
		sc := r.Scenarios[k]
		_, err := fmt.Fprintf(w, "knee: %s, %.1f req/s offered, is the most load the server sustained: it kept up with what it was sent and kept %.0f %% of requests within the SLO%s\n",
			sc.Name, sc.Load.TargetRate, 100*minGoodput, note)
		return err
	}
	_, err := fmt.Fprintf(w, "knee: no stage was sustained with %.0f %% of requests within the SLO on a valid measurement%s\n", 100*minGoodput, note)
	return err
}

// KneeWhyNot says in a few words why a stage judged a is not the knee.
func KneeWhyNot(sc *result.Scenario, a capacity.Assessment) string {
	switch a.Reason {
	case capacity.ReasonUnderdelivery:
		return fmt.Sprintf("fell behind, completed %.0f %% of what was sent", 100*a.Delivered)
	case capacity.ReasonQueueGrowing:
		return fmt.Sprintf("its queue grew by %.0f requests", a.QueueGrowth)
	case capacity.ReasonTTFTGrowing:
		return "its TTFT grew through the stage"
	case capacity.ReasonGoodput:
		return fmt.Sprintf("goodput %.0f %%", 100*sc.Goodput.Fraction)
	case capacity.ReasonImprecise:
		g := sc.MeasurementError.Goodput
		return fmt.Sprintf("cannot tell: responses read late put goodput in [%.1f %%, %.1f %%]", 100*g.Low, 100*g.High)
	case capacity.ReasonInvalid:
		return "the measurement was invalid (" + sc.Load.InvalidCause + ")"
	case capacity.ReasonErrors:
		return "no request succeeded"
	case capacity.ReasonTooShort:
		if len(sc.Series.SentPerS) == 0 {
			return "cannot tell: the result has no per-second series"
		}
		return "cannot tell: too few steady seconds (lengthen the stage)"
	case "":
		return "sustained"
	}
	return a.Reason
}
