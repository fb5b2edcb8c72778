// Package telemetry exports spate's own live measurements while a run goes
// on: a Prometheus endpoint (client_golang, native histograms beside
// classic buckets) and OTLP push over HTTP or gRPC (the OpenTelemetry SDK,
// exponential histograms), and, optionally, one OTLP span per request with
// the trace and span id that were sent in its traceparent header, so that
// a slow request in spate's records can be found in the server's traces.
//
// Latencies are exported as histograms, never as percentiles computed
// here. Names and labels are in docs/observability.md.
//
// Stage: outputs (live, while the run goes on).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package telemetry
