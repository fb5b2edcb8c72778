package failover

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
)

// tracing is an upstream that sends a traceparent as the protocol clients
// do (record.NewTrace) and fails its first attempts.
type tracing struct {
	fails   int
	headers []string
}

func (f *tracing) Do(_ context.Context, _ *workload.Request, rec *record.Record) {
	f.headers = append(f.headers, rec.NewTrace())
	if len(f.headers) <= f.fails {
		rec.Fail(record.HTTPStatus(503), "503", time.Now())
	}
}

// TestRetriesStayInTheTrace: every attempt of a retried request carries a
// traceparent of the same trace with a new span, and the record carries
// the trace, the last span and the earlier attempts' spans.
func TestRetriesStayInTheTrace(t *testing.T) {
	up := &tracing{fails: 2}
	c, err := New(Config{Upstreams: []Upstream{{"a", up}}, Retries: 3, Budget: 10, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c.sleep = func(context.Context, time.Duration) bool { return true }
	var rec record.Record
	rec.Reset()
	c.Do(context.Background(), &workload.Request{}, &rec)
	if rec.Failed() || rec.Attempts != 3 || len(up.headers) != 3 {
		t.Fatalf("attempts %d, headers %d, error %q", rec.Attempts, len(up.headers), rec.Err)
	}
	trace := up.headers[0][3:35]
	spans := map[string]bool{}
	for _, h := range up.headers {
		parts := strings.Split(h, "-")
		if len(parts) != 4 || parts[1] != trace {
			t.Fatalf("traceparents %v: want one trace id", up.headers)
		}
		spans[parts[2]] = true
	}
	if len(spans) != 3 {
		t.Errorf("traceparents %v: want a new span per attempt", up.headers)
	}
	if got := record.TraceParent(rec.TraceID, rec.SpanID); got != up.headers[2] {
		t.Errorf("record %s, want the last attempt's %s", got, up.headers[2])
	}
	if len(rec.PriorSpans) != 2 || record.TraceParent(rec.TraceID, rec.PriorSpans[0]) != up.headers[0] || record.TraceParent(rec.TraceID, rec.PriorSpans[1]) != up.headers[1] {
		t.Errorf("prior spans %x, want the first two attempts'", rec.PriorSpans)
	}
}
