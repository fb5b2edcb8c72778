package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
)

// BenchmarkRecord measures the exporter's cost per finished request of 64
// tokens (Prometheus only, as with --metrics-addr), from many goroutines.
func BenchmarkRecord(b *testing.B) {
	e, err := Start(context.Background(), Config{MetricsAddr: "127.0.0.1:0", Endpoint: "e"})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	e.StageStart(context.Background(), runner.Stage{Name: "s", Rate: 10}, time.Now())
	t0 := time.Now()
	gaps := make([]time.Duration, 63)
	for i := range gaps {
		gaps[i] = 10 * time.Millisecond
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		rec := &record.Record{Intent: "faq", Sent: t0, Intended: t0, FirstToken: t0.Add(80 * time.Millisecond), End: t0.Add(time.Second), Gaps: gaps, OutputTokens: 64, InputTokens: 256}
		for pb.Next() {
			e.Sent("s", t0, t0, false)
			e.Record("s", rec)
		}
	})
}
