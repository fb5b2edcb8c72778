package telemetry

import (
	"strconv"

	"go.opentelemetry.io/otel/attribute"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
)

// Label names of every series (Prometheus) and attribute (OTLP).
const (
	labelStage    = "stage"
	labelEndpoint = "endpoint"
	labelLoad     = "load"
	labelIntent   = "intent"
	labelOutcome  = "outcome"
)

// LoadLevel names a stage's load as the label "load" carries it:
// "rate=20" (open loop, requests per second), "ramp=2-20" or
// "concurrency=8" (closed loop).
func LoadLevel(st runner.Stage) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	switch {
	case st.Concurrency > 0:
		return "concurrency=" + strconv.Itoa(st.Concurrency)
	case st.RampFrom > 0:
		return "ramp=" + f(st.RampFrom) + "-" + f(st.Rate)
	case st.Rate > 0:
		return "rate=" + f(st.Rate)
	case st.TokenRate > 0:
		return "token_rate=" + f(st.TokenRate)
	}
	return "unpaced"
}

// Outcome is the label "outcome" of a finished request: "ok" or its error
// kind (e.g. "timeout", "http_503").
func Outcome(rec *record.Record) string {
	if rec.Err == record.OK {
		return "ok"
	}
	return string(rec.Err)
}

// intentLabel is the label "intent": the workload's intent, or "none".
func intentLabel(intent string) string {
	if intent == "" {
		return "none"
	}
	return intent
}

func attrs(stage, endpoint, load string) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String(labelStage, stage),
		attribute.String(labelEndpoint, endpoint),
		attribute.String(labelLoad, load),
	}
}

func intentAttr(intent string) attribute.KeyValue {
	return attribute.String(labelIntent, intentLabel(intent))
}

func outcomeAttr(outcome string) attribute.KeyValue {
	return attribute.String(labelOutcome, outcome)
}
