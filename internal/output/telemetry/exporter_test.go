package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
)

// feed sends a known set of requests through an exporter's Observer
// methods: two successes of intent faq (TTFT 100 and 300 ms, gaps of 10
// and 20 ms, 3 output tokens), one timeout of intent code, one warm-up
// request (left out of all but in-flight) and one still in flight.
func feed(e *Exporter, stage string) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	recs := []record.Record{
		{Seq: 1, Intent: "faq", Intended: ms(0), Sent: ms(2), FirstToken: ms(102), End: ms(132), Gaps: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}, InputTokens: 100, OutputTokens: 3, Status: 200,
			TraceID: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: [8]byte{1, 1, 1, 1, 1, 1, 1, 1}},
		{Seq: 2, Intent: "faq", Intended: ms(0), Sent: ms(0), FirstToken: ms(300), End: ms(330), Gaps: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}, InputTokens: 50, OutputTokens: 3, Status: 200},
		{Seq: 3, Intent: "code", Intended: ms(0), Sent: ms(0), End: ms(1000), InputTokens: 10, Err: record.Timeout},
		{Seq: 4, Warmup: true, Intended: ms(0), Sent: ms(0), FirstToken: ms(50), End: ms(60), OutputTokens: 1},
	}
	for i := range recs {
		e.Sent(stage, recs[i].Sent, recs[i].Intended, recs[i].Warmup)
	}
	e.Sent(stage, ms(0), ms(0), false) // still in flight
	for i := range recs {
		e.Record(stage, &recs[i])
	}
}

func TestPrometheusEndpoint(t *testing.T) {
	e, err := Start(context.Background(), Config{MetricsAddr: "127.0.0.1:0", Endpoint: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	e.StageStart(context.Background(), runner.Stage{Name: "peak", Rate: 5}, time.Now())
	feed(e, "peak")
	e.Record("no-such-stage", &record.Record{}) // ignored

	resp, err := http.Get("http://" + e.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"stage": "peak", "endpoint": "http://127.0.0.1:1/v1", "load": "rate=5"}
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
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"spate_requests_sent_total", base, 4},
		{"spate_in_flight", base, 1},
		{"spate_requests_total", with("intent", "faq", "outcome", "ok"), 2},
		{"spate_requests_total", with("intent", "code", "outcome", "timeout"), 1},
		{"spate_input_tokens_total", with("intent", "faq"), 150},
		{"spate_output_tokens_total", with("intent", "faq"), 6},
		{"spate_output_tokens_total", with("intent", "code"), 0},
	} {
		got, ok := value(fams[tc.name], tc.labels)
		if !ok || got != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	for _, tc := range []struct {
		name       string
		count      uint64
		sum        float64
		nativeSpan bool
	}{
		{"spate_ttft_seconds", 2, 0.1 + 0.3, true},
		{"spate_e2e_seconds", 2, 0.13 + 0.33, true},
		{"spate_itl_seconds", 4, 0.01 + 0.02 + 0.01 + 0.02, true},
		// TPOT: (E2E − TTFT)/(3 − 1) = 15 ms for both.
		{"spate_tpot_seconds", 2, 0.015 + 0.015, true},
	} {
		h := hist(fams[tc.name], with("intent", "faq"))
		if h == nil {
			t.Errorf("no %s{intent=faq}", tc.name)
			continue
		}
		if h.GetSampleCount() != tc.count || math.Abs(h.GetSampleSum()-tc.sum) > 1e-9 {
			t.Errorf("%s: count %d sum %v, want %d and %v", tc.name, h.GetSampleCount(), h.GetSampleSum(), tc.count, tc.sum)
		}
		if len(h.GetBucket()) == 0 {
			t.Errorf("%s has no classic buckets", tc.name)
		}
	}
	// Schedule lag: 2 ms for one request, 0 for three (warm-up left out).
	if h := hist(fams["spate_schedule_lag_seconds"], base); h == nil || h.GetSampleCount() != 4 || math.Abs(h.GetSampleSum()-0.002) > 1e-9 {
		t.Errorf("schedule lag %v", h)
	}
	if h := hist(fams["spate_ttft_seconds"], with("intent", "code")); h != nil && h.GetSampleCount() != 0 {
		t.Error("a failed request's TTFT was observed")
	}
}

// TestNativeHistograms asks for the protobuf exposition, as a Prometheus
// with native histograms on does, and finds the exponential buckets.
func TestNativeHistograms(t *testing.T) {
	e, err := Start(context.Background(), Config{MetricsAddr: "127.0.0.1:0", Endpoint: "e"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	e.StageStart(context.Background(), runner.Stage{Name: "s", Concurrency: 3}, time.Now())
	feed(e, "s")
	req, _ := http.NewRequest(http.MethodGet, "http://"+e.Addr()+"/metrics", nil)
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	found := false
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if mf.GetName() != "spate_ttft_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			if labelOf(m, "intent") != "faq" {
				continue // no observations
			}
			if h.GetSchema() != 3 || len(h.GetPositiveSpan()) == 0 {
				t.Errorf("native histogram: schema %d, %d spans", h.GetSchema(), len(h.GetPositiveSpan()))
			}
			if labelOf(m, "load") != "concurrency=3" {
				t.Errorf("load label %q", labelOf(m, "load"))
			}
			found = true
		}
	}
	if !found {
		t.Error("no spate_ttft_seconds in the protobuf exposition")
	}
}

func labelOf(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// metricWith finds the sample of mf with exactly these labels.
func metricWith(mf *dto.MetricFamily, labels map[string]string) *dto.Metric {
	for _, m := range mf.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		ok := true
		for k, v := range labels {
			ok = ok && labelOf(m, k) == v
		}
		if ok {
			return m
		}
	}
	return nil
}

func value(mf *dto.MetricFamily, labels map[string]string) (float64, bool) {
	m := metricWith(mf, labels)
	switch {
	case m == nil:
		return 0, false
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	}
	return 0, false
}

func hist(mf *dto.MetricFamily, labels map[string]string) *dto.Histogram {
	if m := metricWith(mf, labels); m != nil {
		return m.GetHistogram()
	}
	return nil
}

func TestStartErrors(t *testing.T) {
	e, err := Start(context.Background(), Config{MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	if _, err := Start(context.Background(), Config{MetricsAddr: e.Addr()}); err == nil {
		t.Error("a busy --metrics-addr was accepted")
	}
	for _, cfg := range []Config{
		{OTLPEndpoint: "127.0.0.1:4318"},
		{OTLPEndpoint: "http://127.0.0.1:4318", OTLPProtocol: "udp"},
		{OTLPTraces: true},
	} {
		if _, err := Start(context.Background(), cfg); err == nil {
			t.Errorf("Start(%+v) accepted it", cfg)
		}
	}
}

func TestLoadLevel(t *testing.T) {
	for _, tc := range []struct {
		st   runner.Stage
		want string
	}{
		{runner.Stage{Rate: 20}, "rate=20"},
		{runner.Stage{Rate: 2.5, RampFrom: 1}, "ramp=1-2.5"},
		{runner.Stage{Concurrency: 8}, "concurrency=8"},
		{runner.Stage{}, "unpaced"},
	} {
		if got := LoadLevel(tc.st); got != tc.want {
			t.Errorf("LoadLevel(%+v) = %s, want %s", tc.st, got, tc.want)
		}
	}
}

func TestErrorHandler(t *testing.T) {
	var b strings.Builder
	h := errorHandler(&b)
	h.Handle(fmt.Errorf("export: %w", context.Canceled))
	if b.Len() != 0 {
		t.Errorf("a cancelled export was reported: %q", b.String())
	}
	for i := range 7 {
		h.Handle(fmt.Errorf("refused %d", i))
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != maxErrors+1 || !strings.Contains(lines[0], "refused 0") || !strings.Contains(lines[maxErrors], "further errors") {
		t.Errorf("reported:\n%s", b.String())
	}
	errorHandler(nil).Handle(errors.New("x")) // no writer: dropped
}

// TestUnreachableOTLPEndpoint: a collector that is not there makes the
// flush fail with an error naming the endpoint, within the flush's time.
func TestUnreachableOTLPEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	e, err := Start(context.Background(), Config{OTLPEndpoint: "http://" + addr, PushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	e.StageStart(context.Background(), runner.Stage{Name: "s"}, time.Now())
	feed(e, "s")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = e.Shutdown(ctx)
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Errorf("Shutdown: %v, want an error naming %s", err, addr)
	}
	if err2 := e.Shutdown(ctx); err2 != err {
		t.Errorf("second Shutdown: %v, want the first's error", err2)
	}
}
