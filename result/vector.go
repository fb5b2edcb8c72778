package result

// Vector is a stage's vector search figures: recall@k of every measured
// query beside the latency of the same queries (issue 10), so that a reader
// sees whether recall drops when load rises, and, over stages with
// different ef_search, the recall-vs-QPS frontier.
type Vector struct {
	// Backend is the vector database driven: pgvector, chroma or qdrant.
	Backend string `json:"backend"`
	// Metric is the distance the ground truth was computed with: cosine,
	// l2 or dot.
	Metric string `json:"metric"`
	// K is the k of recall@k (the number of neighbours asked for).
	K int `json:"k"`
	// EfSearch is the search parameter of the stage (hnsw.ef_search for
	// pgvector, hnsw_ef for Qdrant); 0 when the server's default was
	// used, −1 for an exact search that bypassed the index.
	EfSearch int `json:"ef_search,omitempty"`
	// Queries counts the measured queries (warm-up left out); Failed the
	// ones among them that failed and carry no recall.
	Queries int `json:"queries"`
	Failed  int `json:"failed"`
	// QueriesPerS is the rate of successful queries over the span from
	// the first measured query's send to the last one's end (so that
	// preparing the index at the stage's start is left out).
	QueriesPerS float64 `json:"queries_per_s"`
	// Recall is the distribution of recall@k over the successful queries.
	Recall Recall `json:"recall"`
	// LatencyMS is the latency of the same queries, send to answer.
	LatencyMS Dist `json:"latency_ms"`
	// Warnings say what limits the figures (few queries, few batches).
	Warnings []string `json:"warnings,omitempty"`

	// HitRate is the share of successful queries whose results held the
	// exact nearest neighbour (the seed's Hit: recall 1@k).
	HitRate float64 `json:"hit_rate"`
	// ByLatency is the stage's queries cut into latency bands at its P50,
	// P90, P99 and P99.9, each band with its queries' mean recall and hit
	// rate (seed 004 §4.3: the hit rate per latency band).
	ByLatency []LatencyBand `json:"by_latency,omitempty"`
	// ByRecall is the latency of the queries at each recall level (recall
	// below 0.92; at least 0.92, 0.95; exactly 1): the P99.9 per recall
	// threshold the seed reads.
	ByRecall []RecallLevel `json:"by_recall,omitempty"`
}

// LatencyBand is the queries of a stage whose latency falls in
// [FromMS, ToMS) (the last band includes its maximum).
type LatencyBand struct {
	Band       string  `json:"band"` // p0-p50, p50-p90, p90-p99, p99-p99.9, p99.9-max
	FromMS     float64 `json:"from_ms"`
	ToMS       float64 `json:"to_ms"`
	Queries    int     `json:"queries"`
	MeanRecall float64 `json:"mean_recall"`
	HitRate    float64 `json:"hit_rate"`
}

// RecallLevel is the latency of the queries whose recall@k is in
// [Min, Max] (Max excluded when below 1). A percentile is left out when
// too few queries have that recall: 100 for the P99, 1,000 for the P99.9.
type RecallLevel struct {
	Level   string   `json:"level"`
	Min     float64  `json:"min"`
	Max     float64  `json:"max"`
	Queries int      `json:"queries"`
	P50MS   *float64 `json:"p50_ms,omitempty"`
	P99MS   *float64 `json:"p99_ms,omitempty"`
	P999MS  *float64 `json:"p999_ms,omitempty"`
}

// Recall is a distribution of recall@k values, each in [0, 1].
type Recall struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	// MeanLow and MeanHigh are a 95 % confidence interval of the mean
	// from batch means: the queries in order of completion are cut into
	// consecutive batches, and the interval is Student's t over the batch
	// means, so that queries of one run are not taken as independent.
	// Both equal Mean when there are too few queries for an interval.
	MeanLow  float64 `json:"mean_low"`
	MeanHigh float64 `json:"mean_high"`
	Batches  int     `json:"batches"`
	Min      float64 `json:"min"`
	// P1 and P5 are the recall that 99 % and 95 % of queries reach or
	// exceed (the 1st and 5th percentiles, nearest rank).
	P1  float64 `json:"p1"`
	P5  float64 `json:"p5"`
	P50 float64 `json:"p50"`
	// Histogram counts queries per tenth of recall: element i counts
	// recall in [i/10, (i+1)/10), the last also counts recall 1.
	Histogram []int `json:"histogram"`
}

// Workflow is a stage's figures of multi-step requests (workflows): how
// many ran and failed, at which step they failed, and each step's latency.
type Workflow struct {
	// Name is the workflow's name from its definition.
	Name string `json:"name"`
	// Runs counts measured workflows; Succeeded those whose every step
	// succeeded.
	Runs      int `json:"runs"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// FailedAt counts failed workflows by the step that failed them.
	FailedAt map[string]int `json:"failed_at,omitempty"`
	// Steps are the steps in their defined order.
	Steps []WorkflowStep `json:"steps"`
	// E2EMS is the latency of the successful workflows, first step's
	// start to last step's end.
	E2EMS Dist `json:"e2e_ms"`
}

// WorkflowStep is the figures of one step of a workflow.
type WorkflowStep struct {
	Name string `json:"name"`
	// Runs counts the times the step ran (a step after a failed one does
	// not run); Failed the times it failed, by error kind in Errors.
	Runs   int            `json:"runs"`
	Failed int            `json:"failed"`
	Errors map[string]int `json:"errors,omitempty"`
	// LatencyMS is the latency of the step's successful runs.
	LatencyMS Dist `json:"latency_ms"`
	// For a streamed (SSE) step: TTFTMS is the time from the step's send
	// to its first content event, ITLMS the gaps between its content
	// events, OutputTokens the tokens its successful runs generated (the
	// stream's usage, else one per content event). Absent for steps whose
	// answer comes whole.
	TTFTMS       *Dist `json:"ttft_ms,omitempty"`
	ITLMS        *Dist `json:"itl_ms,omitempty"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
}
