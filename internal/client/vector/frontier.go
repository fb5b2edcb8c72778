package vector

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spate-dev/spate/result"
)

// WriteFrontier prints one line per stage that has vector figures: its
// search breadth, the queries per second it sustained, recall@k (mean with
// its interval, p5, p1) and latency (p50, p99, p99.9). Over stages that
// sweep ef_search, the lines are the recall-vs-QPS frontier.
func WriteFrontier(w io.Writer, scs []result.Scenario) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	k, mixed := 0, false // stages with different top_k get a k column
	for _, sc := range scs {
		if sc.Vector != nil {
			if k != 0 && sc.Vector.K != k {
				mixed = true
			}
			if k == 0 {
				k = sc.Vector.K
			}
		}
	}
	if k == 0 {
		return nil
	}
	if mixed {
		fmt.Fprintf(tw, "stage\tef\tk\tqueries/s\trecall@k mean\t95%% interval\tp5\tp1\tp50 ms\tp99 ms\tp99.9 ms\tfailed\t\n")
	} else {
		fmt.Fprintf(tw, "stage\tef\tqueries/s\trecall@%d mean\t95%% interval\tp5\tp1\tp50 ms\tp99 ms\tp99.9 ms\tfailed\t\n", k)
	}
	for _, sc := range scs {
		v := sc.Vector
		if v == nil {
			continue
		}
		ef := "default"
		switch {
		case v.EfSearch == Exact:
			ef = "exact"
		case v.EfSearch > 0:
			ef = fmt.Sprint(v.EfSearch)
		}
		name := sc.Name + "\t" + ef
		if mixed {
			name += fmt.Sprintf("\t%d", v.K)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.4f\t[%.4f, %.4f]\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%d\t\n",
			name, v.QueriesPerS, v.Recall.Mean, v.Recall.MeanLow, v.Recall.MeanHigh,
			v.Recall.P5, v.Recall.P1, v.LatencyMS.P50, v.LatencyMS.P99, v.LatencyMS.P999, v.Failed)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the recall frontier: %w", err)
	}
	return nil
}
