package telemetry

import (
	"context"
	"fmt"
	"net/url"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Protocols of OTLP push.
const (
	ProtoHTTP = "http"
	ProtoGRPC = "grpc"
)

// CheckOTLP reports an OTLP endpoint or protocol that cannot be used.
func CheckOTLP(endpoint, protocol string) error {
	if protocol != ProtoHTTP && protocol != ProtoGRPC {
		return fmt.Errorf("OTLP protocol %q: use http or grpc", protocol)
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("OTLP endpoint %q: want a URL with its scheme, e.g. http://127.0.0.1:4318 (http) or http://127.0.0.1:4317 (grpc); http:// sends in the clear, https:// with TLS", endpoint)
	}
	return nil
}

// newResource describes spate to the backend.
func newResource(version string) *resource.Resource {
	return resource.NewSchemaless(
		attribute.String("service.name", "spate"),
		attribute.String("service.version", version),
	)
}

// newMetricExporter makes the OTLP metric exporter of the protocol. A URL
// with http:// sends without TLS, as OTEL_EXPORTER_OTLP_ENDPOINT does.
func newMetricExporter(ctx context.Context, endpoint, protocol string) (sdkmetric.Exporter, error) {
	if protocol == ProtoGRPC {
		return otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpointURL(endpoint))
	}
	return otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(endpointPath(endpoint, "/v1/metrics")))
}

// newTraceExporter makes the OTLP span exporter of the protocol.
func newTraceExporter(ctx context.Context, endpoint, protocol string) (sdktrace.SpanExporter, error) {
	if protocol == ProtoGRPC {
		return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(endpoint))
	}
	return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpointPath(endpoint, "/v1/traces")))
}

// endpointPath adds the signal's path to a base URL without one, as the
// OTLP exporters do with OTEL_EXPORTER_OTLP_ENDPOINT.
func endpointPath(endpoint, path string) string {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Path != "" && u.Path != "/") {
		return endpoint
	}
	u.Path = path
	return u.String()
}

// otelMetrics are the OTLP instruments; names follow OpenTelemetry's
// conventions and become spate_*_total / spate_*_seconds in Prometheus by
// the standard OTLP translation.
type otelMetrics struct {
	sent         metric.Int64Counter
	inFlight     metric.Int64UpDownCounter
	requests     metric.Int64Counter
	inputTokens  metric.Int64Counter
	outputTokens metric.Int64Counter
	ttft         metric.Float64Histogram
	itl          metric.Float64Histogram
	tpot         metric.Float64Histogram
	e2e          metric.Float64Histogram
	lag          metric.Float64Histogram
}

// exponential makes every histogram a base-2 exponential histogram.
var exponential = sdkmetric.NewView(
	sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram},
	sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 160, MaxScale: 20}},
)

func newOtelMetrics(m metric.Meter) (*otelMetrics, error) {
	var o otelMetrics
	var err error
	do := func(e error) {
		if err == nil {
			err = e
		}
	}
	var e error
	o.sent, e = m.Int64Counter("spate.requests.sent", metric.WithUnit("{request}"), metric.WithDescription("Requests sent (warm-up excluded)."))
	do(e)
	o.inFlight, e = m.Int64UpDownCounter("spate.in_flight", metric.WithUnit("{request}"), metric.WithDescription("Requests sent and not yet finished (warm-up included)."))
	do(e)
	o.requests, e = m.Int64Counter("spate.requests", metric.WithUnit("{request}"), metric.WithDescription("Requests finished (warm-up excluded), by outcome."))
	do(e)
	o.inputTokens, e = m.Int64Counter("spate.input_tokens", metric.WithUnit("{token}"), metric.WithDescription("Prompt tokens of finished requests."))
	do(e)
	o.outputTokens, e = m.Int64Counter("spate.output_tokens", metric.WithUnit("{token}"), metric.WithDescription("Output tokens of finished requests."))
	do(e)
	o.ttft, e = m.Float64Histogram("spate.ttft", metric.WithUnit("s"), metric.WithDescription("Time to first token of successful requests."))
	do(e)
	o.itl, e = m.Float64Histogram("spate.itl", metric.WithUnit("s"), metric.WithDescription("Inter-token latency of successful requests."))
	do(e)
	o.tpot, e = m.Float64Histogram("spate.tpot", metric.WithUnit("s"), metric.WithDescription("Time per output token of successful requests."))
	do(e)
	o.e2e, e = m.Float64Histogram("spate.e2e", metric.WithUnit("s"), metric.WithDescription("End-to-end latency of successful requests."))
	do(e)
	o.lag, e = m.Float64Histogram("spate.schedule_lag", metric.WithUnit("s"), metric.WithDescription("Send time minus the intended send time."))
	do(e)
	if err != nil {
		return nil, fmt.Errorf("creating OTLP instruments: %w", err)
	}
	return &o, nil
}
