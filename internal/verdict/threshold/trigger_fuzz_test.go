package threshold

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

func FuzzParseTrigger(f *testing.F) {
	for _, s := range []string{
		"delta(p95(e2e)) > 300ms for 2m and error_rate >= 5%", "rel(p99(ttft), previous) > 50%",
		"delta(mean(tpot), first 30s) >= 10ms and rps < 5 for 10s", "error_rate > 1% for 1s",
		"delta(p95(e2e){stage:peak}) > 1s", "rel(error_rate) > 1.5", "and", "for", "delta(", "delta()",
		"delta(p95(e2e), first 0s) > 1", "x and y for z", "delta(p95(e2e)) > 300ms for 2m for 3m",
		"rel(rps) > 10% and rel(rps) < 200%", "(((", "delta(p99(ttft) , previous ,) > 1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		tr, err := ParseTrigger(expr)
		if err != nil {
			if prefix := fmt.Sprintf("trigger %q: ", expr); !strings.HasPrefix(err.Error(), prefix) {
				t.Fatalf("error %q does not start with %q", err, prefix)
			}
			return
		}
		if len(tr.Conds) == 0 || tr.Hold < 0 {
			t.Fatalf("ParseTrigger(%q) = %+v", expr, tr)
		}
		for _, c := range tr.Conds {
			if math.IsNaN(c.Value) || math.IsInf(c.Value, 0) || c.Value < 0 {
				t.Fatalf("ParseTrigger(%q): value %v", expr, c.Value)
			}
		}
		canon := tr.String()
		again, err := ParseTrigger(canon)
		if err != nil {
			t.Fatalf("ParseTrigger(%q) = %+v, but its String() %q does not parse: %v", expr, tr, canon, err)
		}
		clear := func(x *Trigger) {
			x.Expr = ""
			for i := range x.Conds {
				x.Conds[i].Expr = ""
			}
		}
		clear(&tr)
		clear(&again)
		if !reflect.DeepEqual(tr, again) {
			t.Fatalf("ParseTrigger(%q) = %+v; String() %q re-parses to %+v", expr, tr, canon, again)
		}
		if s := again.String(); s != canon {
			t.Fatalf("String() not stable: %q then %q", canon, s)
		}
	})
}
