package threshold

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"p99(ttft) < 800ms", "p99.9(e2e) <= 5s", "p999(e2e) < 5s", "avg(itl) < 30ms",
		"p50(e2e_intended)<1.5s", "error_rate < 0.1%", "goodput >= 95%", "rps >= 10",
		"count(ttft) >= 100", "stddev(itl) < 5ms", "p99(ttft) < 250µs", "max(e2e) < 1.5m",
		"P99( TTFT )<800MS", "p0.5(ttft) > .5", "mean(tokens_per_chunk) != 1.5",
		"p99(ttft) < 800mss", "ttft < 1s", "p99(rps) > 1", "p99(ttft < 1", "p101(ttft) < 1",
		"p99(ttft) = 1", "p99(ttft) < -1", "", "(", "p99(", "p99()", "1.2.3", "ttft_ms",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		th, err := Parse(expr)
		if err != nil {
			if prefix := fmt.Sprintf("threshold %q: ", expr); !strings.HasPrefix(err.Error(), prefix) {
				t.Fatalf("error %q does not start with %q", err, prefix)
			}
			return
		}
		if th.Expr != strings.TrimSpace(expr) {
			t.Fatalf("Expr = %q, want %q", th.Expr, strings.TrimSpace(expr))
		}
		if math.IsNaN(th.Value) || math.IsInf(th.Value, 0) || th.Value < 0 {
			t.Fatalf("Parse(%q).Value = %v", expr, th.Value)
		}
		if (th.Agg == AggPercentile) != (th.Percentile > 0 && th.Percentile <= 100) {
			t.Fatalf("Parse(%q) = %+v: percentile out of step with Agg", expr, th)
		}
		canon := th.String()
		again, err := Parse(canon)
		if err != nil {
			t.Fatalf("Parse(%q) = %+v, but its String() %q does not parse: %v", expr, th, canon, err)
		}
		th.Expr, again.Expr = "", ""
		if again != th {
			t.Fatalf("Parse(%q) = %+v; String() %q re-parses to %+v", expr, th, canon, again)
		}
		if s := again.String(); s != canon {
			t.Fatalf("String() not stable: %q then %q", canon, s)
		}
	})
}
