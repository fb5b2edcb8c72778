package result

import "time"

// Shard says which part of a sharded run a result is (spate run --shard),
// or which shards a merged result was made of (spate merge).
type Shard struct {
	// Index and Count: this result is shard Index of Count (0-based). A
	// merged result has Count and no Index (−1).
	Index int `json:"index"`
	Count int `json:"count"`
	// Experiment identifies the run the shard belongs to: the SHA-256 of
	// the load settings every shard must share (see merge.Experiment), so
	// a merge can refuse shards of different runs.
	Experiment string `json:"experiment"`
	// StartAt is the agreed start time (--start-at), when one was given.
	StartAt *time.Time `json:"start_at,omitempty"`
	// Clock is the estimate of this machine's clock against the target's,
	// when it was measured.
	Clock *ClockOffset `json:"clock,omitempty"`

	// Merged lists the shard indexes a merged result was made of, in order.
	Merged []int `json:"merged,omitempty"`
	// Missing lists the shard indexes below Count that no input had.
	Missing []int `json:"missing,omitempty"`
	// Duplicates lists shard indexes given more than once.
	Duplicates []int `json:"duplicates,omitempty"`
	// Forced is true when shards that disagree were merged anyway (--force).
	Forced bool `json:"forced,omitempty"`
	// ClockSpreadMS is, for a merged result, the spread (max − min) of the
	// shards' clock offset estimates, in milliseconds.
	ClockSpreadMS *float64 `json:"clock_spread_ms,omitempty"`
}

// ClockOffset is a clock offset estimate: the target's clock minus ours.
// The true offset is within OffsetMS ± UncertaintyMS.
type ClockOffset struct {
	OffsetMS      float64 `json:"offset_ms"`
	UncertaintyMS float64 `json:"uncertainty_ms"`
	// Against names what the clock was compared with (the target's HTTP
	// Date header).
	Against string `json:"against"`
	// Probes is how many requests the estimate took.
	Probes int `json:"probes"`
}
