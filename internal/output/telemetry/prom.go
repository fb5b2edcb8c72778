package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Classic bucket bounds, in seconds, beside the native (exponential)
// buckets: for scrapers that do not negotiate native histograms.
var (
	latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 20, 30, 60, 120}
	itlBuckets     = []float64{0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.2, 0.5, 1, 2.5}
)

// promMetrics are the Prometheus collectors, on a registry of their own.
type promMetrics struct {
	reg          *prometheus.Registry
	sent         *prometheus.CounterVec   // stage, endpoint, load
	inFlight     *prometheus.GaugeVec     // stage, endpoint, load
	requests     *prometheus.CounterVec   // + intent, outcome
	inputTokens  *prometheus.CounterVec   // + intent
	outputTokens *prometheus.CounterVec   // + intent
	ttft         *prometheus.HistogramVec // + intent
	itl          *prometheus.HistogramVec
	tpot         *prometheus.HistogramVec
	e2e          *prometheus.HistogramVec
	lag          *prometheus.HistogramVec // stage, endpoint, load
}

func newPromMetrics() *promMetrics {
	reg := prometheus.NewRegistry()
	base := []string{labelStage, labelEndpoint, labelLoad}
	withIntent := append(base[:3:3], labelIntent)
	withOutcome := append(withIntent[:4:4], labelOutcome)
	counter := func(name, help string, labels []string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	hist := func(name, help string, buckets []float64, labels []string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: name, Help: help, Buckets: buckets,
			// Native histogram: buckets grow by at most 10 % each.
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  160,
			NativeHistogramMinResetDuration: time.Hour,
		}, labels)
		reg.MustRegister(h)
		return h
	}
	m := &promMetrics{
		reg:          reg,
		sent:         counter("spate_requests_sent_total", "Requests sent (warm-up excluded).", base),
		requests:     counter("spate_requests_total", "Requests finished (warm-up excluded), by outcome: ok or the error kind.", withOutcome),
		inputTokens:  counter("spate_input_tokens_total", "Prompt tokens of finished requests (warm-up excluded).", withIntent),
		outputTokens: counter("spate_output_tokens_total", "Output tokens of finished requests (warm-up excluded).", withIntent),
		ttft:         hist("spate_ttft_seconds", "Time to first token of successful requests: send to the first content-bearing event.", latencyBuckets, withIntent),
		itl:          hist("spate_itl_seconds", "Inter-token latency: gaps between successive content-bearing events of successful requests.", itlBuckets, withIntent),
		tpot:         hist("spate_tpot_seconds", "Time per output token of successful requests with two or more output tokens: (E2E − TTFT) / (tokens − 1).", itlBuckets, withIntent),
		e2e:          hist("spate_e2e_seconds", "End-to-end latency of successful requests: send to the end of the response.", latencyBuckets, withIntent),
		lag:          hist("spate_schedule_lag_seconds", "Send time minus the intended (scheduled) send time.", itlBuckets, base),
	}
	m.inFlight = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "spate_in_flight", Help: "Requests sent and not yet finished (warm-up included)."}, base)
	reg.MustRegister(m.inFlight)
	return m
}
