package telemetry

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/spate-dev/spate/internal/record"
)

// TestSpanCarriesTheRequestsIDs exports records as spans to memory: each
// span has the trace and span id the request sent in its traceparent, its
// send and end times, its status and attributes; steps are child spans.
func TestSpanCarriesTheRequestsIDs(t *testing.T) {
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem), sdktrace.WithIDGenerator(idGenerator{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	tr := tp.Tracer("test")
	st := &stageState{name: "peak", endpoint: "http://h/v1", load: "rate=5"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ok := &record.Record{Intent: "faq", Sent: t0, FirstToken: t0.Add(80 * time.Millisecond), End: t0.Add(time.Second), OutputTokens: 7, InputTokens: 9, Status: 200,
		TraceID: [16]byte{0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, SpanID: [8]byte{0xbb, 1, 2, 3, 4, 5, 6, 7},
		Steps: []record.Step{{Name: "retrieve", Start: t0, End: t0.Add(100 * time.Millisecond), SpanID: [8]byte{0xcc, 9}}, {Name: "generate", Start: t0.Add(100 * time.Millisecond), End: t0.Add(time.Second), Err: record.Timeout}}}
	bad := &record.Record{Sent: t0, End: t0.Add(time.Millisecond), Err: record.HTTPStatus(503), Status: 503}
	span(tr, st, ok)
	span(tr, st, bad)
	spans := mem.GetSpans()
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 4 (2 steps, 2 requests)", len(spans))
	}
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		if s.Name == SpanName && s.SpanContext.TraceID() == ok.TraceID {
			byName["ok"] = s
		} else if s.Name == SpanName {
			byName["bad"] = s
		} else {
			byName[s.Name] = s
		}
	}
	req := byName["ok"]
	if req.SpanContext.SpanID() != ok.SpanID || req.Parent.IsValid() {
		t.Errorf("span ids %s/%s parent %v, want the request's %x/%x as a root", req.SpanContext.TraceID(), req.SpanContext.SpanID(), req.Parent.IsValid(), ok.TraceID, ok.SpanID)
	}
	if !req.StartTime.Equal(ok.Sent) || !req.EndTime.Equal(ok.End) {
		t.Errorf("span from %v to %v, want %v to %v", req.StartTime, req.EndTime, ok.Sent, ok.End)
	}
	if len(req.Events) != 1 || req.Events[0].Name != "first_token" || !req.Events[0].Time.Equal(ok.FirstToken) {
		t.Errorf("events %+v", req.Events)
	}
	want := map[attribute.Key]attribute.Value{
		"spate.stage": attribute.StringValue("peak"), "spate.intent": attribute.StringValue("faq"),
		"spate.outcome": attribute.StringValue("ok"), "spate.output_tokens": attribute.IntValue(7),
		"spate.load": attribute.StringValue("rate=5"), "http.response.status_code": attribute.IntValue(200),
	}
	for _, kv := range req.Attributes {
		if w, ok := want[kv.Key]; ok {
			if w != kv.Value {
				t.Errorf("%s = %v, want %v", kv.Key, kv.Value.Emit(), w.Emit())
			}
			delete(want, kv.Key)
		}
	}
	if len(want) > 0 {
		t.Errorf("attributes missing: %v", want)
	}
	if req.Status.Code != codes.Unset {
		t.Errorf("status %v", req.Status)
	}
	for _, name := range []string{"retrieve", "generate"} {
		s := byName[name]
		if s.Parent.SpanID() != ok.SpanID || s.SpanContext.TraceID() != ok.TraceID {
			t.Errorf("step %s is not a child of the request span", name)
		}
	}
	if got := byName["retrieve"].SpanContext.SpanID(); got != [8]byte{0xcc, 9} {
		t.Errorf("step retrieve has span %s, want the one its traceparent sent", got)
	}
	if byName["generate"].Status.Code != codes.Error {
		t.Error("failed step not marked")
	}
	b := byName["bad"]
	if b.Status.Code != codes.Error || b.Status.Description != "http_503 (HTTP 503)" || !b.SpanContext.TraceID().IsValid() {
		t.Errorf("failed request span: status %+v, trace %s", b.Status, b.SpanContext.TraceID())
	}
}
