package sim

import (
	"github.com/prometheus/client_golang/prometheus"
)

// simMetrics are one Server's Prometheus metrics, on a private registry,
// named as vLLM names them (counters carry the _total suffix that vLLM's
// Python client adds) and labelled model_name.
type simMetrics struct {
	reg *prometheus.Registry

	running       prometheus.Gauge
	waiting       prometheus.Gauge
	kvUsage       prometheus.Gauge
	gpuCacheUsage prometheus.Gauge

	prefixQueries prometheus.Counter
	prefixHits    prometheus.Counter
	preemptions   prometheus.Counter
	promptTokens  prometheus.Counter
	genTokens     prometheus.Counter
	engineSteps   prometheus.Counter

	ttft      prometheus.Histogram
	itl       prometheus.Histogram
	tpot      prometheus.Histogram
	e2e       prometheus.Histogram
	queue     prometheus.Histogram
	batchSize prometheus.Histogram

	success *prometheus.CounterVec // finished_reason
	faults  *prometheus.CounterVec // kind
	errors  *prometheus.CounterVec // status code
}

func newSimMetrics(model string) *simMetrics {
	// vLLM's histogram buckets (ITL with 1 ms and 5 ms added at the bottom).
	ttftBuckets := []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets := []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	e2eBuckets := []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	reg := prometheus.NewRegistry()
	labels := prometheus.Labels{"model_name": model}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels})
		reg.MustRegister(g)
		return g
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
		reg.MustRegister(c)
		return c
	}
	hist := func(name, help string, buckets []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: labels})
		reg.MustRegister(h)
		return h
	}
	vec := func(name, help, label string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels}, []string{label})
		reg.MustRegister(c)
		return c
	}
	m := &simMetrics{
		reg:           reg,
		running:       gauge("vllm:num_requests_running", "Number of requests in model execution batches."),
		waiting:       gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
		kvUsage:       gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
		gpuCacheUsage: gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage (older vLLM name)."),
		prefixQueries: counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens."),
		prefixHits:    counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens."),
		preemptions:   counter("vllm:num_preemptions_total", "Cumulative number of preemptions from the engine."),
		promptTokens:  counter("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
		genTokens:     counter("vllm:generation_tokens_total", "Number of generation tokens processed."),
		engineSteps:   counter("spate_sim_engine_steps_total", "Engine steps executed (engine mode)."),
		ttft:          hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets),
		itl:           hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets),
		tpot:          hist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", itlBuckets),
		e2e:           hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", e2eBuckets),
		queue:         hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", e2eBuckets),
		batchSize:     hist("spate_sim_batch_size", "Sequences per engine step (engine mode).", prometheus.ExponentialBuckets(1, 2, 11)),
		success:       vec("vllm:request_success_total", "Count of successfully processed requests.", "finished_reason"),
		faults:        vec("spate_sim_faults_total", "Faults injected by the simulator, by kind.", "kind"),
		errors:        vec("spate_sim_errors_total", "Requests answered with an error status, by status code.", "code"),
	}
	for _, r := range []string{"stop", "length", "abort"} {
		m.success.WithLabelValues(r)
	}
	for k := range numFaultKinds {
		m.faults.WithLabelValues(k.String())
	}
	return m
}
