package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/output/telemetry/backendtest"
	"github.com/spate-dev/spate/llmtest"
	"github.com/spate-dev/spate/sim"
)

// TestObserveScrapesSimulator loads the simulator in closed loop while
// scraping its /metrics: the server's series are on the stage's time line
// (requests running at every scrape while the load is on, none at the last
// scrape after the drain), and the rate of generated tokens, integrated over
// the scrapes, is exactly the output tokens the client counted.
func TestObserveScrapesSimulator(t *testing.T) {
	_, target := startSim(t, sim.Deterministic(50*time.Millisecond, 5*time.Millisecond, 0))
	base := strings.TrimSuffix(target, "/v1")
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", target,
		"--concurrency", "4", "--duration", "2s", "--output-tokens", "40", "--input-tokens", "64",
		"--scrape", base+"/metrics", "--scrape-interval", "100ms",
		"--scrape-metric", `vllm:num_requests_running`, "--scrape-metric", `vllm:request_success_total{finished_reason="length"}`,
		"--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	sc := readResult(t, out).Scenarios[0]
	srv := sc.Server
	if srv == nil {
		t.Fatal("no server section")
	}
	for _, w := range srv.Warnings {
		// The queue never grows in deterministic mode and the stage is
		// short, so the correlation with TTFT is rightly not computed; any
		// other warning is a fault.
		if !strings.HasPrefix(w, "correlation of server queue depth") {
			t.Errorf("warning: %s", w)
		}
	}
	n := len(srv.OffsetsS)
	// At least the first and last scrapes and some between; a loaded
	// machine may skip ticks, so no exact count.
	if n < 4 || srv.IntervalS != 0.1 || srv.Endpoints[0] != base+"/metrics" {
		t.Fatalf("%d scrapes, interval %v, endpoints %v", n, srv.IntervalS, srv.Endpoints)
	}
	for _, name := range []string{"requests_running", "requests_waiting", "kv_cache_usage", "generation_tokens_per_s", "prompt_tokens_per_s",
		"server_ttft_p50_ms", "server_e2e_p99_ms", "vllm:num_requests_running", `rate(vllm:request_success_total{finished_reason="length"})`} {
		if s, ok := srv.Series[name]; !ok || len(s.Values) != n {
			t.Errorf("series %s: present %v, %d values for %d scrapes", name, ok, len(s.Values), n)
		}
	}
	running := srv.Series["requests_running"].Values
	last := srv.OffsetsS[n-1]
	if last < 2 {
		t.Errorf("last scrape at %.2f s, before the 2 s of load ended", last)
	}
	if running[n-1] == nil || *running[n-1] != 0 {
		t.Errorf("requests running at the last scrape (after the drain) = %v, want 0", deref(running[n-1]))
	}
	// While the load is on (with a margin for the first sends and the last
	// ends), the scrapes see requests running: all of them on an idle
	// machine; on a busy one a stall can leave the 4 workers between
	// requests at a scrape, so one in five may see none. A time line off
	// by the stage's start or a scrape of the wrong server sees none at
	// most scrapes.
	var during, idle []string
	for i, off := range srv.OffsetsS {
		if off > 0.3 && off < 1.7 {
			during = append(during, fmt.Sprintf("%.2f s: %v", off, deref(running[i])))
			if running[i] == nil || *running[i] < 1 {
				idle = append(idle, during[len(during)-1])
			}
		}
	}
	if len(during) == 0 || len(idle)*5 > len(during) {
		t.Errorf("requests running at %d of %d scrapes between 0.3 s and 1.7 s = 0, want ≥ 1 at 4 in 5 while 4 workers send: %v", len(idle), len(during), idle)
	}
	// Σ rate·Δt over the scrapes = the counter's growth from the first
	// scrape (before any token) to the last (after every request ended).
	gen := srv.Series["generation_tokens_per_s"].Values
	var tokens float64
	for i := 1; i < n; i++ {
		if gen[i] != nil {
			tokens += *gen[i] * (srv.OffsetsS[i] - srv.OffsetsS[i-1])
		}
	}
	if math.Abs(tokens-float64(sc.Tokens.Output)) > 1e-6 || sc.Tokens.Output == 0 {
		t.Errorf("server generated %.3f tokens by its counter's rate, client counted %d", tokens, sc.Tokens.Output)
	}
	var finished float64
	fin := srv.Series[`rate(vllm:request_success_total{finished_reason="length"})`].Values
	for i := 1; i < n; i++ {
		if fin[i] != nil {
			finished += *fin[i] * (srv.OffsetsS[i] - srv.OffsetsS[i-1])
		}
	}
	if math.Abs(finished-float64(sc.Requests.Succeeded)) > 1e-6 {
		t.Errorf("server finished %.3f requests by its counter's rate, client saw %d succeed", finished, sc.Requests.Succeeded)
	}
	if srv.Figures["requests_running_peak"] < 1 || srv.Figures["requests_running_peak"] > 4 {
		t.Errorf("requests_running_peak %v, want 1..4", srv.Figures["requests_running_peak"])
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestObserveBadEndpointsWarn scrapes a 404, a page of HTML and a refused
// port beside a target that works: the run succeeds and each bad endpoint
// is a warning in the result.
func TestObserveBadEndpointsWarn(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	_, target := startSim(t, sim.Deterministic(5*time.Millisecond, time.Millisecond, 4))
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "<html><body>hello</body></html>") }))
	defer html.Close()
	refused := backendtest.FreeAddr(t)
	out := filepath.Join(t.TempDir(), "r.json")
	// A closed loop sends all ten however busy the machine: an open one at
	// 20 req/s missed eight sends under three suites at once.
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", target, "--concurrency", "2", "--requests", "10",
		"--scrape", missing.URL+"/metrics", "--scrape", html.URL+"/metrics", "--scrape", "http://"+refused+"/metrics",
		"--scrape-interval", "50ms", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	sc := readResult(t, out).Scenarios[0]
	if sc.Requests.Succeeded != 10 {
		t.Errorf("requests %+v", sc.Requests)
	}
	w := strings.Join(sc.Server.Warnings, "\n")
	for _, want := range []string{missing.URL + "/metrics: HTTP 404", html.URL + "/metrics: malformed exposition text", refused + "/metrics: "} {
		if !strings.Contains(w, want) {
			t.Errorf("no warning with %q in:\n%s", want, w)
		}
	}
}

func TestObserveFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--scrape", "127.0.0.1:8000/metrics"},
		{"--scrape", "http://h/metrics", "--scrape-metric", `x{a=~"b"}`},
		{"--scrape-metric", "x"},
		{"--scrape", "http://h/metrics", "--scrape-interval", "0s"},
		{"--otlp-endpoint", "127.0.0.1:4318"},
		{"--otlp-endpoint", "http://127.0.0.1:4318", "--otlp-protocol", "thrift"},
		{"--otlp-traces"},
	} {
		code, _, stderr := cli(t, context.Background(), append([]string{"run", "--target", "http://127.0.0.1:1/v1", "--quiet"}, args...)...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (usage)\n%s", args, code, exitUsage, stderr)
		}
	}
}

// TestObserveExportsToCollector runs spate with --otlp-endpoint and
// --otlp-traces against a real OpenTelemetry Collector: the metrics arrive
// labelled with the stage, and there is one span per request with the
// trace and span id that the records file says its traceparent carried.
func TestObserveExportsToCollector(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	col := backendtest.StartCollector(t)
	_, target := startSim(t, sim.Deterministic(5*time.Millisecond, time.Millisecond, 4))
	dir := t.TempDir()
	out, recs := filepath.Join(dir, "r.json"), filepath.Join(dir, "req.jsonl")
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", target, "--rate", "20", "--requests", "12", "--name", "otlp",
		"--otlp-endpoint", col.GRPC, "--otlp-protocol", "grpc", "--otlp-traces", "--otlp-interval", "200ms",
		"--out", out, "--records", recs, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	want := map[string]string{} // trace id → span id, from the records
	f, err := os.Open(recs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			TraceID string `json:"trace_id"`
			SpanID  string `json:"span_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.TraceID == "" {
			t.Fatalf("record without trace_id: %s", sc.Text())
		}
		want[l.TraceID] = l.SpanID
	}
	if len(want) != 12 {
		t.Fatalf("%d distinct trace ids in the records, want 12", len(want))
	}
	got := map[string]string{}
	var names map[string]bool
	col.WaitLines(t, 30*time.Second, func(lines []map[string]any) bool {
		got, names = collectorContent(lines, "otlp")
		return len(got) >= 12 && names["spate.requests"]
	})
	for tr, sp := range want {
		if got[tr] != sp {
			t.Errorf("trace %s: span %q at the collector, %q in the records", tr, got[tr], sp)
		}
	}
	for _, n := range []string{"spate.requests", "spate.requests.sent", "spate.ttft", "spate.itl", "spate.e2e", "spate.in_flight", "spate.output_tokens"} {
		if !names[n] {
			t.Errorf("metric %s of stage otlp did not arrive (got %v)", n, names)
		}
	}
}

// collectorContent reads the collector's OTLP/JSON lines: the spans'
// trace id → span id, and the names of metrics with stage=stage.
func collectorContent(lines []map[string]any, stage string) (map[string]string, map[string]bool) {
	spans, names := map[string]string{}, map[string]bool{}
	list := func(v any) []any { l, _ := v.([]any); return l }
	obj := func(v any) map[string]any { m, _ := v.(map[string]any); return m }
	hasStage := func(attrs any, key string) bool {
		for _, a := range list(attrs) {
			if obj(a)["key"] == key && obj(obj(a)["value"])["stringValue"] == stage {
				return true
			}
		}
		return false
	}
	for _, l := range lines {
		for _, rs := range list(l["resourceSpans"]) {
			for _, ss := range list(obj(rs)["scopeSpans"]) {
				for _, s := range list(obj(ss)["spans"]) {
					if hasStage(obj(s)["attributes"], "spate.stage") {
						spans[strings.ToLower(fmt.Sprint(obj(s)["traceId"]))] = strings.ToLower(fmt.Sprint(obj(s)["spanId"]))
					}
				}
			}
		}
		for _, rm := range list(l["resourceMetrics"]) {
			for _, sm := range list(obj(rm)["scopeMetrics"]) {
				for _, m := range list(obj(sm)["metrics"]) {
					for _, kind := range []string{"sum", "exponentialHistogram", "gauge"} {
						for _, dp := range list(obj(obj(m)[kind])["dataPoints"]) {
							if hasStage(obj(dp)["attributes"], "stage") {
								names[fmt.Sprint(obj(m)["name"])] = true
							}
						}
					}
				}
			}
		}
	}
	return spans, names
}

// TestObserveFlushesOnInterrupt stops a run the way Ctrl-C does (its
// context is cancelled) with an OTLP push interval of an hour: whatever
// reaches the collector was pushed by the flush at the end, and it counts
// the successful requests the partial result counts.
func TestObserveFlushesOnInterrupt(t *testing.T) {
	col := backendtest.StartCollector(t)
	srv := llmtest.NewServer(llmtest.Config{TTFT: 5 * time.Millisecond, ITL: time.Millisecond, Tokens: 4})
	defer srv.Close()
	target := srv.BaseURL()
	out := filepath.Join(t.TempDir(), "r.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Interrupt once the load is on, as a user would.
		for srv.Requests() < 5 && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	code, stdout, stderr := cli(t, ctx, "run", "--target", target, "--rate", "20", "--duration", "1m", "--name", "cut",
		"--otlp-endpoint", col.HTTP, "--otlp-interval", "1h", "--out", out, "--quiet")
	if code != exitError {
		t.Fatalf("exit %d, want %d (interrupted)\nstdout %s\nstderr %s", code, exitError, stdout, stderr)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("no partial result: %v\nstdout %s\nstderr %s", err, stdout, stderr)
	}
	r := readResult(t, out)
	if !r.Interrupted {
		t.Fatal("result not marked interrupted")
	}
	ok := float64(r.Scenarios[0].Requests.Succeeded)
	var got float64
	col.WaitLines(t, 30*time.Second, func(lines []map[string]any) bool {
		got = okRequests(lines, "cut")
		return got > 0
	})
	if got != ok || ok < 1 {
		t.Errorf("collector got spate.requests{outcome=ok} = %v, the result counts %v successes", got, ok)
	}
}

// okRequests is the last value of spate.requests{stage, outcome=ok} in the
// collector's lines.
func okRequests(lines []map[string]any, stage string) float64 {
	list := func(v any) []any { l, _ := v.([]any); return l }
	obj := func(v any) map[string]any { m, _ := v.(map[string]any); return m }
	var v float64
	for _, l := range lines {
		for _, rm := range list(l["resourceMetrics"]) {
			for _, sm := range list(obj(rm)["scopeMetrics"]) {
				for _, m := range list(obj(sm)["metrics"]) {
					if obj(m)["name"] != "spate.requests" {
						continue
					}
					var sum float64
					for _, dp := range list(obj(obj(m)["sum"])["dataPoints"]) {
						attrs := map[string]any{}
						for _, a := range list(obj(dp)["attributes"]) {
							attrs[fmt.Sprint(obj(a)["key"])] = obj(obj(a)["value"])["stringValue"]
						}
						if attrs["stage"] == stage && attrs["outcome"] == "ok" {
							var n float64
							fmt.Sscan(fmt.Sprint(obj(dp)["asInt"]), &n)
							sum += n
						}
					}
					if sum > 0 {
						v = sum
					}
				}
			}
		}
	}
	return v
}
