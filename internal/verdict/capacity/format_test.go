package capacity

import (
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"context"
	"testing"
	"time"

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
	// A trial that falls short of 95 % within the noise passes and says
	// so; a search whose trials could not decide the capacity, and one
	// interrupted, name no capacity: they say what their trials showed.
	buf.WriteString("\n")
	q := newQueue(4, 200*time.Millisecond, 3*time.Second, 3)
	sc, _ := q.trial(context.Background(), Load{Rate: 19})
	for a := Assess(sc, 19, q.criteria()); !a.WithinNoise; a = Assess(sc, 19, q.criteria()) {
		sc, _ = q.trial(context.Background(), Load{Rate: 19})
	}
	_ = WriteTrial(&buf, 1, Load{Rate: 19}, sc, Assess(sc, 19, q.criteria()))
	coin := 0
	toss := func(ctx context.Context, l Load) (*result.Scenario, error) {
		sc, err := (&server{Knee: 100}).trial(ctx, l)
		if coin++; l.Rate >= 4 && coin%2 == 0 {
			sc.Goodput.Fraction = 0.5
		}
		return sc, err
	}
	out, _ = Search(context.Background(), toss, Config{MinRate: 4, MaxRate: 8, Criteria: Criteria{Duration: 10 * time.Second}})
	buf.WriteString("\n")
	if err := WriteSummary(&buf, out.Capacity); err != nil {
		t.Fatal(err)
	}
	n := 0
	out, _ = Search(context.Background(), func(ctx context.Context, l Load) (*result.Scenario, error) {
		if n++; n == 5 {
			return nil, context.Canceled
		}
		return (&server{Knee: 7.3}).trial(ctx, l)
	}, Config{MinRate: 1, MaxRate: 100})
	buf.WriteString("\n")
	if err := WriteSummary(&buf, out.Capacity); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "summary.txt", buf.Bytes())
}
