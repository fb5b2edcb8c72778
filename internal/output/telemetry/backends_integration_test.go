//go:build integration

package telemetry

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/output/telemetry/backendtest"
	"github.com/spate-dev/spate/internal/runner"
)

// point is one OTLP data point as the collector's file exporter wrote it.
type point struct {
	metric, kind string
	attrs        map[string]string
	raw          map[string]any
}

// otlpPoints walks the OTLP/JSON lines: every metric data point, and the
// resource attributes seen.
func otlpPoints(lines []map[string]any) (pts []point, resource map[string]string) {
	resource = map[string]string{}
	for _, l := range lines {
		for _, rm := range list(l["resourceMetrics"]) {
			for k, v := range attrMap(obj(obj(rm)["resource"])["attributes"]) {
				resource[k] = v
			}
			for _, sm := range list(obj(rm)["scopeMetrics"]) {
				for _, m := range list(obj(sm)["metrics"]) {
					mo := obj(m)
					for _, kind := range []string{"sum", "gauge", "histogram", "exponentialHistogram"} {
						for _, dp := range list(obj(mo[kind])["dataPoints"]) {
							pts = append(pts, point{metric: fmt.Sprint(mo["name"]), kind: kind, attrs: attrMap(obj(dp)["attributes"]), raw: obj(dp)})
						}
					}
				}
			}
		}
	}
	return pts, resource
}

// otlpSpans returns the spans written, as their JSON objects.
func otlpSpans(lines []map[string]any) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		for _, rs := range list(l["resourceSpans"]) {
			for _, ss := range list(obj(rs)["scopeSpans"]) {
				for _, s := range list(obj(ss)["spans"]) {
					out = append(out, obj(s))
				}
			}
		}
	}
	return out
}

func list(v any) []any { l, _ := v.([]any); return l }

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

func attrMap(v any) map[string]string {
	out := map[string]string{}
	for _, a := range list(v) {
		ao := obj(a)
		for _, val := range obj(ao["value"]) {
			out[fmt.Sprint(ao["key"])] = fmt.Sprint(val)
		}
	}
	return out
}

// last is the last data point of a metric whose attributes include want.
func last(pts []point, metric string, want map[string]string) (point, bool) {
	var found point
	ok := false
	for _, p := range pts {
		if p.metric != metric {
			continue
		}
		match := true
		for k, v := range want {
			match = match && p.attrs[k] == v
		}
		if match {
			found, ok = p, true
		}
	}
	return found, ok
}

// TestOTLPToCollector pushes metrics and spans over OTLP/HTTP and OTLP/gRPC
// to a real OpenTelemetry Collector and reads back what it wrote: every
// metric name, with its labels and the exact counts fed in, exponential
// histograms for latencies, and spans with the requests' own trace ids.
func TestOTLPToCollector(t *testing.T) {
	col := backendtest.StartCollector(t)
	for _, proto := range []string{ProtoHTTP, ProtoGRPC} {
		t.Run(proto, func(t *testing.T) {
			endpoint := col.HTTP
			if proto == ProtoGRPC {
				endpoint = col.GRPC
			}
			e, err := Start(context.Background(), Config{OTLPEndpoint: endpoint, OTLPProtocol: proto, OTLPTraces: true,
				PushInterval: 200 * time.Millisecond, Endpoint: "http://sut/v1", Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			stage := "otlp-" + proto
			e.StageStart(context.Background(), runner.Stage{Name: stage, Rate: 5}, time.Now())
			feed(e, stage)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := e.Shutdown(ctx); err != nil {
				t.Fatalf("shutdown (flush): %v", err)
			}
			base := map[string]string{"stage": stage, "endpoint": "http://sut/v1", "load": "rate=5"}
			with := func(kv ...string) map[string]string {
				m := map[string]string{}
				for k, v := range base {
					m[k] = v
				}
				for i := 0; i < len(kv); i += 2 {
					m[kv[i]] = kv[i+1]
				}
				return m
			}
			lines := col.WaitLines(t, 30*time.Second, func(lines []map[string]any) bool {
				pts, _ := otlpPoints(lines)
				_, okM := last(pts, "spate.ttft", base)
				return okM && len(spansOf(otlpSpans(lines), "0102030405060708090a0b0c0d0e0f10", stage)) > 0
			})
			pts, res := otlpPoints(lines)
			if res["service.name"] != "spate" || res["service.version"] != "test" {
				t.Errorf("resource %v", res)
			}
			for _, tc := range []struct {
				metric, kind, field, want string
				attrs                     map[string]string
			}{
				{"spate.requests", "sum", "asInt", "2", with("intent", "faq", "outcome", "ok")},
				{"spate.requests", "sum", "asInt", "1", with("intent", "code", "outcome", "timeout")},
				{"spate.requests.sent", "sum", "asInt", "4", base},
				{"spate.in_flight", "sum", "asInt", "1", base},
				{"spate.input_tokens", "sum", "asInt", "150", with("intent", "faq")},
				{"spate.output_tokens", "sum", "asInt", "6", with("intent", "faq")},
				{"spate.ttft", "exponentialHistogram", "count", "2", with("intent", "faq")},
				{"spate.ttft", "exponentialHistogram", "sum", "0.4", with("intent", "faq")},
				{"spate.itl", "exponentialHistogram", "count", "4", with("intent", "faq")},
				{"spate.tpot", "exponentialHistogram", "count", "2", with("intent", "faq")},
				{"spate.e2e", "exponentialHistogram", "count", "2", with("intent", "faq")},
				{"spate.schedule_lag", "exponentialHistogram", "count", "4", base},
			} {
				p, ok := last(pts, tc.metric, tc.attrs)
				if !ok {
					t.Errorf("%s%v did not arrive", tc.metric, tc.attrs)
					continue
				}
				got := fmt.Sprint(p.raw[tc.field])
				if p.kind != tc.kind || got != tc.want {
					t.Errorf("%s%v: %s %s = %s, want %s %s", tc.metric, tc.attrs, p.kind, tc.field, got, tc.kind, tc.want)
				}
			}
			spans := spansOf(otlpSpans(lines), "0102030405060708090a0b0c0d0e0f10", stage)
			if len(spans) != 1 {
				t.Fatalf("%d spans with the request's trace id", len(spans))
			}
			if got := fmt.Sprint(spans[0]["spanId"]); got != hex.EncodeToString([]byte{1, 1, 1, 1, 1, 1, 1, 1}) {
				t.Errorf("span id %s", got)
			}
			if spans[0]["name"] != SpanName {
				t.Errorf("span name %v", spans[0]["name"])
			}
		})
	}
}

// spansOf picks the spans of a trace id in a stage.
func spansOf(spans []map[string]any, traceID, stage string) []map[string]any {
	var out []map[string]any
	for _, s := range spans {
		if strings.EqualFold(fmt.Sprint(s["traceId"]), traceID) && attrMap(s["attributes"])["spate.stage"] == stage {
			out = append(out, s)
		}
	}
	return out
}

// TestPrometheusScrapesMetricsAddr has a real Prometheus server scrape
// the --metrics-addr endpoint and queries it back through its HTTP API:
// spate's series arrive with their labels and the counts fed in.
func TestPrometheusScrapesMetricsAddr(t *testing.T) {
	e, err := Start(context.Background(), Config{MetricsAddr: "127.0.0.1:0", Endpoint: "http://sut/v1"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	e.StageStart(context.Background(), runner.Stage{Name: "peak", Concurrency: 4}, time.Now())
	feed(e, "peak")
	prom := backendtest.StartPrometheus(t, e.Addr(), 200*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	want := map[string]string{"job": "spate", "stage": "peak", "endpoint": "http://sut/v1", "load": "concurrency=4", "intent": "faq", "outcome": "ok"}
	var got []backendtest.Sample
	for ctx.Err() == nil {
		got, err = prom.Query(ctx, `spate_requests_total{outcome="ok"}`)
		if err == nil && len(got) > 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(got) != 1 {
		t.Fatalf("spate_requests_total{outcome=\"ok\"}: %v (err %v)", got, err)
	}
	for k, v := range want {
		if got[0].Labels[k] != v {
			t.Errorf("label %s = %q, want %q (all: %v)", k, got[0].Labels[k], v, got[0].Labels)
		}
	}
	if got[0].Value != 2 {
		t.Errorf("spate_requests_total = %v, want 2", got[0].Value)
	}
	for q, wantV := range map[string]float64{
		`spate_ttft_seconds_count{intent="faq"}`:                        2,
		`spate_ttft_seconds_sum{intent="faq"}`:                          0.4,
		`spate_itl_seconds_count{intent="faq"}`:                         4,
		`spate_in_flight{stage="peak"}`:                                 1,
		`spate_requests_total{intent="code",outcome="timeout"}`:         1,
		`sum(spate_ttft_seconds_bucket{intent="faq",le="0.1"})`:         1,
		`histogram_quantile(1, spate_e2e_seconds_bucket{intent="faq"})`: 0.4,
	} {
		s, err := prom.Query(ctx, q)
		if err != nil || len(s) != 1 || !near(s[0].Value, wantV) {
			t.Errorf("%s = %v (err %v), want %v", q, s, err, wantV)
		}
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }
