package chaos

import (
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"testing"
	"time"
)

func TestWriteSummaryGolden(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ss, ws := plantedStage(t0)
	c := Figures(ss, ws, FigureOptions{Start: t0, End: t0.Add(5 * time.Second), RecoveryBin: 500 * time.Millisecond,
		Injected: map[string]int64{"blackhole": 20, "latency": 50}, Failing: 20})
	var b bytes.Buffer
	if err := WriteSummary(&b, "chaos", c); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "summary.golden", b.Bytes())
}
