package telemetry

import (
	"context"
	"math/rand/v2"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/spate-dev/spate/internal/record"
)

// givenIDs carries, in a context, the ids a request's span must have: the
// ones its traceparent header sent.
type givenIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

type idsKey struct{}

// idGenerator gives a root span the ids found in its context (the
// request's traceparent), a workflow step's span the id its traceparent
// sent, and random ids otherwise.
type idGenerator struct{}

// NewIDs returns the context's ids, or random ones.
func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if ids, ok := ctx.Value(idsKey{}).(*givenIDs); ok && ids.trace.IsValid() && ids.span.IsValid() {
		return ids.trace, ids.span
	}
	var t trace.TraceID
	for !t.IsValid() {
		putUint64(t[:8], rand.Uint64())
		putUint64(t[8:], rand.Uint64())
	}
	return t, randomSpanID()
}

// stepSpanKey carries, in a context, the span id a workflow step's span
// must have: the one its traceparent header sent.
type stepSpanKey struct{}

// NewSpanID returns the context's step span id, or a random one.
func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if s, ok := ctx.Value(stepSpanKey{}).(trace.SpanID); ok && s.IsValid() {
		return s
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var s trace.SpanID
	for !s.IsValid() {
		putUint64(s[:], rand.Uint64())
	}
	return s
}

func putUint64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (56 - 8*i))
	}
}

// SpanName is the name of every request's span.
const SpanName = "spate.request"

// span exports one finished request as a span from its send to its end,
// with the request's own trace and span id, the stage's labels, the
// request's tokens and outcome, an event at the first token, and a child
// span per workflow step.
func span(tr trace.Tracer, st *stageState, rec *record.Record) {
	ctx := context.WithValue(context.Background(), idsKey{}, &givenIDs{trace: rec.TraceID, span: rec.SpanID})
	attrs := []attribute.KeyValue{
		attribute.String("spate.stage", st.name),
		attribute.String("spate.endpoint", st.endpoint),
		attribute.String("spate.load", st.load),
		attribute.String("spate.intent", intentLabel(rec.Intent)),
		attribute.String("spate.outcome", Outcome(rec)),
		attribute.Int("spate.input_tokens", rec.InputTokens),
		attribute.Int("spate.output_tokens", rec.OutputTokens),
		attribute.Int64("spate.seq", int64(rec.Seq)),
	}
	if rec.Status != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", rec.Status))
	}
	if rec.Model != "" {
		attrs = append(attrs, attribute.String("gen_ai.response.model", rec.Model))
	}
	if lag := rec.Sent.Sub(rec.Intended); lag > 0 {
		attrs = append(attrs, attribute.Float64("spate.schedule_lag_s", lag.Seconds()))
	}
	ctx, sp := tr.Start(ctx, SpanName, trace.WithTimestamp(rec.Sent), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	if !rec.FirstToken.IsZero() {
		sp.AddEvent("first_token", trace.WithTimestamp(rec.FirstToken))
	}
	for _, s := range rec.Steps {
		_, child := tr.Start(context.WithValue(ctx, stepSpanKey{}, trace.SpanID(s.SpanID)), s.Name, trace.WithTimestamp(s.Start), trace.WithAttributes(attribute.String("spate.stage", st.name)))
		if s.Err != record.OK {
			child.SetStatus(codes.Error, string(s.Err))
		}
		child.End(trace.WithTimestamp(s.End))
	}
	if rec.Err != record.OK {
		msg := string(rec.Err)
		if rec.Status != 0 {
			msg += " (HTTP " + strconv.Itoa(rec.Status) + ")"
		}
		sp.SetStatus(codes.Error, msg)
	}
	sp.End(trace.WithTimestamp(rec.End))
}
