package result

// Server is what the system under test said about itself during a stage:
// its Prometheus metrics, scraped on the stage's time line (issue 7).
type Server struct {
	// Endpoints are the scraped URLs (credentials removed).
	Endpoints []string `json:"endpoints"`
	// IntervalS is the scrape interval in seconds.
	IntervalS float64 `json:"interval_s"`
	// OffsetsS are the scrape times, in seconds from the stage's start (the
	// same origin as Series of the scenario).
	OffsetsS []float64 `json:"offsets_s"`
	// Series maps a named series (e.g. "kv_cache_usage",
	// "requests_waiting") to its values, one per element of OffsetsS.
	Series map[string]ServerSeries `json:"series"`
	// Figures are derived from the series (e.g. "kv_cache_usage_peak"; the
	// list is in package observe, Figures, and docs/observability.md).
	Figures map[string]float64 `json:"figures,omitempty"`
	// EnergySource says how the GPU energy figures (gpu_energy_j and those
	// derived from it, docs/observability.md) were got: "measured" from
	// the GPUs' energy counters, "estimated" by integrating their power
	// over the stage; absent without them.
	EnergySource string `json:"energy_source,omitempty"`
	// Warnings say what could not be scraped or parsed.
	Warnings []string `json:"warnings,omitempty"`
}

// ServerSeries is one named series of scraped values.
type ServerSeries struct {
	// Metric is the source metric name and labels, e.g.
	// `vllm:gpu_cache_usage_perc{model_name="m"}`.
	Metric string `json:"metric"`
	// Unit is the unit of Values, e.g. "ratio", "requests", "1/s", "ms";
	// "value" for a --scrape-metric gauge or histogram (the metric's own).
	Unit string `json:"unit,omitempty"`
	// Values has one value per scrape; null where the metric was absent.
	Values []*float64 `json:"values"`
}
