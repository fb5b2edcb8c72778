package capacity

import (
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"context"
	"testing"

	"github.com/spate-dev/spate/result"
)

func TestFormatGolden(t *testing.T) {
	var buf bytes.Buffer
	s := &server{Knee: 7.3, MaxRate: 7.6}
	onTrial := func(n int, l Load, sc *result.Scenario, a Assessment) { _ = WriteTrial(&buf, n, l, sc, a) }
	out, err := Search(context.Background(), s.trial, Config{MinRate: 1, MaxRate: 100, Repeats: 1, OnTrial: onTrial})
	if err != nil {
		t.Fatal(err)
	}
	buf.WriteString("\n")
	if err := WriteSummary(&buf, out.Capacity); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("\n")
	sw, err := Sweep(context.Background(), (&server{Knee: 15, Closed: 20}).trial, SweepConfig{Concurrency: 8, Repeats: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteSummary(&buf, sw.Capacity); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "summary.txt", buf.Bytes())
}
