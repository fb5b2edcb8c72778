package observe

// kind is how a series is computed from its source metric.
type kind uint8

const (
	// gaugeKind: the value at each scrape, combined over matching series.
	gaugeKind kind = iota
	// rateKind: a counter's increase per second between scrapes.
	rateKind
	// ratioKind: the increase of one counter over the increase of another
	// between scrapes (e.g. prefix cache hits over queries).
	ratioKind
	// quantileKind: p50 and p99 per interval from a histogram's bucket
	// increases between scrapes.
	quantileKind
)

// combine is how the values of several matching series (label sets or
// endpoints) become one.
type combine uint8

const (
	sumOf combine = iota // counts: requests running on every replica
	maxOf                // usage: the fullest replica
)

// source is one way of getting a series: a metric (and, for ratios, the
// denominator's metric), scaled by Scale (0 means 1).
type source struct {
	sel   Selector
	den   Selector
	scale float64
}

// spec is a named series and the metrics of each server that give it;
// the first source found in a stage's scrapes is used.
type spec struct {
	name    string
	unit    string
	kind    kind
	combine combine
	sources []source
}

func src(sel string, scale float64) source { return source{sel: MustSelector(sel), scale: scale} }

func ratio(num, den string) source {
	return source{sel: MustSelector(num), den: MustSelector(den)}
}

// known are the series spate derives from the metrics of vLLM, SGLang,
// TGI, Triton / TensorRT-LLM and NVIDIA's DCGM exporter. Names are from the
// servers' documentation; vLLM's are also what the built-in simulator
// serves.
var known = []spec{
	{name: "kv_cache_usage", unit: "ratio", kind: gaugeKind, combine: maxOf, sources: []source{
		src("vllm:kv_cache_usage_perc", 1),
		src("vllm:gpu_cache_usage_perc", 1),
		src("sglang:token_usage", 1),
		src(`nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction"}`, 1),
	}},
	{name: "prefix_cache_hit_rate", unit: "ratio", kind: ratioKind, sources: []source{
		ratio("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"),
		ratio("vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_queries_total"),
	}},
	{name: "prefix_cache_hit_rate", unit: "ratio", kind: gaugeKind, combine: maxOf, sources: []source{
		src("vllm:gpu_prefix_cache_hit_rate", 1),
		src("sglang:cache_hit_rate", 1),
	}},
	{name: "requests_running", unit: "requests", kind: gaugeKind, sources: []source{
		src("vllm:num_requests_running", 1),
		src("sglang:num_running_reqs", 1),
		src("tgi_batch_current_size", 1),
		src(`nv_trt_llm_request_metrics{request_type="active"}`, 1),
	}},
	{name: "requests_waiting", unit: "requests", kind: gaugeKind, sources: []source{
		src("vllm:num_requests_waiting", 1),
		src("sglang:num_queue_reqs", 1),
		src("tgi_queue_size", 1),
		src("nv_inference_pending_request_count", 1),
	}},
	{name: "requests_swapped", unit: "requests", kind: gaugeKind, sources: []source{
		src("vllm:num_requests_swapped", 1),
	}},
	{name: "preemptions_per_s", unit: "1/s", kind: rateKind, sources: []source{
		src("vllm:num_preemptions_total", 1),
		src("sglang:num_retractions_total", 1),
	}},
	{name: "prompt_tokens_per_s", unit: "tokens/s", kind: rateKind, sources: []source{
		src("vllm:prompt_tokens_total", 1),
		src("sglang:prompt_tokens_total", 1),
	}},
	{name: "generation_tokens_per_s", unit: "tokens/s", kind: rateKind, sources: []source{
		src("vllm:generation_tokens_total", 1),
		src("sglang:generation_tokens_total", 1),
	}},
	{name: "requests_finished_per_s", unit: "1/s", kind: rateKind, sources: []source{
		src("vllm:request_success_total", 1),
		src("nv_inference_request_success", 1),
	}},
	{name: "batch_size", unit: "sequences", kind: quantileKind, sources: []source{
		src("spate_sim_batch_size", 1),
		src("tgi_batch_next_size", 1),
	}},
	{name: "server_ttft", unit: "ms", kind: quantileKind, sources: []source{
		src("vllm:time_to_first_token_seconds", 1000),
		src("sglang:time_to_first_token_seconds", 1000),
	}},
	{name: "server_itl", unit: "ms", kind: quantileKind, sources: []source{
		src("vllm:inter_token_latency_seconds", 1000),
		src("vllm:time_per_output_token_seconds", 1000),
		src("sglang:inter_token_latency_seconds", 1000),
		src("tgi_request_mean_time_per_token_duration", 1000),
	}},
	{name: "server_e2e", unit: "ms", kind: quantileKind, sources: []source{
		src("vllm:e2e_request_latency_seconds", 1000),
		src("sglang:e2e_request_latency_seconds", 1000),
		src("tgi_request_duration", 1000),
	}},
	{name: "server_queue_time", unit: "ms", kind: quantileKind, sources: []source{
		src("vllm:request_queue_time_seconds", 1000),
		src("tgi_request_queue_duration", 1000),
	}},
	{name: "gpu_utilization", unit: "ratio", kind: gaugeKind, combine: maxOf, sources: []source{
		src("nv_gpu_utilization", 1),
		src("DCGM_FI_DEV_GPU_UTIL", 0.01),
	}},
	{name: "gpu_memory_used_bytes", unit: "bytes", kind: gaugeKind, sources: []source{
		src("nv_gpu_memory_used_bytes", 1),
		src("DCGM_FI_DEV_FB_USED", 1<<20),
	}},
}
