package observe

import "strings"

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

// server is a serving engine (or exporter) whose metrics spate knows, and
// the prefixes of its metric names.
type server struct {
	name     string
	prefixes []string
}

// servers is the one list of the servers whose metrics are in known, in
// the order of the columns of docs/observability.md's table of known
// metrics: the warning when a stage's scrapes had none of them names them
// from here, and a test holds the table's columns and every source of
// known to it, so that neither can drift from the code.
var servers = []server{
	// The built-in simulator serves vLLM's names and its own batch size.
	{name: "vLLM", prefixes: []string{"vllm:", "spate_sim_"}},
	{name: "SGLang", prefixes: []string{"sglang:"}},
	{name: "TGI", prefixes: []string{"tgi_"}},
	{name: "llama.cpp", prefixes: []string{"llamacpp:"}},
	{name: "Triton / TensorRT-LLM", prefixes: []string{"nv_"}},
	{name: "DCGM", prefixes: []string{"DCGM_"}},
}

// serverNames lists the known servers for a message, e.g. "vLLM, SGLang".
func serverNames() string {
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

// known are the series spate derives from the metrics of the servers.
// vLLM's names are what the built-in simulator serves, and they and
// llama.cpp's were checked on recordings of the real servers (testdata);
// the others are from the servers' documentation.
//
// llama.cpp's map onto vLLM's series as its names say: requests_deferred
// are waiting for a free slot, requests_processing hold one,
// kv_cache_usage_ratio is the used fraction of the KV cache's cells, and
// the two token counters count prompt tokens evaluated (those its prompt
// cache held are not counted) and tokens generated. Its
// n_busy_slots_per_decode is a mean since the server started (typed a
// counter), so neither its value nor its rate is a batch size in an
// interval; it and kv_cache_tokens can be kept with --scrape-metric.
var known = []spec{
	{name: "kv_cache_usage", unit: "ratio", kind: gaugeKind, combine: maxOf, sources: []source{
		src("vllm:kv_cache_usage_perc", 1),
		src("vllm:gpu_cache_usage_perc", 1),
		src("sglang:token_usage", 1),
		src("llamacpp:kv_cache_usage_ratio", 1),
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
		src("llamacpp:requests_processing", 1),
		src(`nv_trt_llm_request_metrics{request_type="active"}`, 1),
	}},
	{name: "requests_waiting", unit: "requests", kind: gaugeKind, sources: []source{
		src("vllm:num_requests_waiting", 1),
		src("sglang:num_queue_reqs", 1),
		src("tgi_queue_size", 1),
		src("llamacpp:requests_deferred", 1),
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
		src("llamacpp:prompt_tokens_total", 1),
	}},
	{name: "generation_tokens_per_s", unit: "tokens/s", kind: rateKind, sources: []source{
		src("vllm:generation_tokens_total", 1),
		src("sglang:generation_tokens_total", 1),
		src("llamacpp:tokens_predicted_total", 1),
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
	// Power and energy, summed over the GPUs (see energy.go for the
	// stage's joules): the power gauges are in watts; DCGM's energy counter
	// is in millijoules since the driver was loaded (NVIDIA's dcgm-exporter
	// default-counters.csv: "Total energy consumption since boot (in mJ)",
	// NVML's nvmlDeviceGetTotalEnergyConsumption), Triton's in joules, so
	// both rates are joules per second: watts.
	{name: "gpu_power_watts", unit: "W", kind: gaugeKind, sources: powerSources},
	{name: "gpu_energy_j_per_s", unit: "W", kind: rateKind, sources: energySources},
}

// energySources are the GPU energy counters, scaled to joules; the
// stage's energy is taken from the first found (see stageEnergy).
var energySources = []source{
	src("nv_energy_consumption", 1),
	src("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 0.001),
}

// powerSources are the GPU power gauges, in watts; the stage's energy is
// their integral when no energy counter was scraped.
var powerSources = []source{
	src("nv_gpu_power_usage", 1),
	src("DCGM_FI_DEV_POWER_USAGE", 1),
}
