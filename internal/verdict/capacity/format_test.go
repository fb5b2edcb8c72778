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
	n := 0
	trial := func(ctx context.Context, l Load) (*result.Scenario, error) {
		sc, err := s.trial(ctx, l)
		n++
		if err == nil {
			err = WriteTrial(&buf, n, l, sc, Criteria{})
		}
		return sc, err
	}
	out, err := Search(context.Background(), trial, Config{MinRate: 1, MaxRate: 100, Repeats: 1})
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
