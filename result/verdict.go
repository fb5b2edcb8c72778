package result

// Resilience holds a stage's resilience figures (docs/design.md §3), computed
// from its per-second series by package resilience.
type Resilience struct {
	// SlopeWindowS is the sliding window of the slopes, in seconds.
	SlopeWindowS int `json:"slope_window_s"`
	// TTFTp99SlopeMSPerS and E2Ep99SlopeMSPerS are the resilience slopes:
	// the median least-squares slope of per-second P99 over the sliding
	// window, in milliseconds per second (≈ 0: steady; > 0: degrading).
	TTFTp99SlopeMSPerS *float64 `json:"ttft_p99_slope_ms_per_s,omitempty"`
	E2Ep99SlopeMSPerS  *float64 `json:"e2e_p99_slope_ms_per_s,omitempty"`
	// SlopeWindows is the number of window positions the median is of.
	SlopeWindows int `json:"slope_windows"`
	// ErrorRateSlopePPPerMin is the error-rate slope: the same estimator
	// on the per-second error rate in percent, in percentage points per
	// minute (> 0: errors rising).
	ErrorRateSlopePPPerMin *float64 `json:"error_rate_slope_pp_per_min,omitempty"`
	// SLOMetric and SLOms are the objective recovery is measured against:
	// the stage's ttft SLO, else its e2e SLO, else (SLOSource "baseline")
	// 1.5 × the stage's E2E p99 before its first fault.
	SLOMetric string  `json:"slo_metric,omitempty"`
	SLOms     float64 `json:"slo_ms,omitempty"`
	SLOSource string  `json:"slo_source,omitempty"`
	// RecoveryWindowS is the window of the windowed P99, in seconds.
	RecoveryWindowS int `json:"recovery_window_s,omitempty"`
	// Recoveries are the times from each event (the load step at the
	// stage's start, a fault's end) until windowed P99 was back under the
	// SLO for good, each judged only up to the next fault's onset.
	Recoveries []Recovery `json:"recoveries,omitempty"`
	Warnings   []string   `json:"warnings,omitempty"`
}

// Recovery is how long the stage took to meet its SLO after one event.
type Recovery struct {
	// Event is "load_step" (the stage's start, when its load began) or
	// "fault_end" (the faults of the stage before ended).
	Event string `json:"event"`
	// AtS is when the event happened, in seconds from the stage's start:
	// the stage's start, or the fault window's end; recovery is judged on
	// the whole seconds of the series from the first after it.
	AtS float64 `json:"at_s"`
	// Recovered is false when windowed P99 was still over the SLO when
	// the stage ended; RecoveryS is then how long was watched.
	Recovered bool    `json:"recovered"`
	RecoveryS float64 `json:"recovery_s"`
	// Unmeasured, when not Recovered, says recovery could not be told:
	// the seconds watched ended less than one recovery window after the
	// last second over the SLO (the service may have recovered), or held
	// no whole window. RecoveryS is then how long was watched.
	Unmeasured bool `json:"unmeasured,omitempty"`
}

// Capacity is the outcome of spate capacity: the highest open-loop rate
// at which the goodput fraction met its target under the SLOs, as an
// interval, with every trial that led to it (one scenario each).
type Capacity struct {
	// Method is "adaptive" (exponential search then bisection) or "sweep"
	// (closed-loop maximum, then open-loop steps up to it).
	Method        string             `json:"method"`
	GoodputTarget float64            `json:"goodput_target"`
	SLOms         map[string]float64 `json:"slo_ms,omitempty"`
	// RateRPS is the capacity: the highest rate that passed (0: none did),
	// decided at Confidence by repeating its trials when Confidence is
	// set.
	RateRPS float64 `json:"rate_rps"`
	// Confidence is the confidence at which the search decided that
	// RateRPS passes and the interval's upper end fails (a sequential
	// test on the pass/fail of their trials); RateTrials is how many of
	// the trials at RateRPS passed, of how many judged.
	Confidence float64 `json:"confidence,omitempty"`
	RateTrials [2]int  `json:"rate_trials,omitempty"`
	// Interrupted says why the search stopped before its end (a trial
	// that could not run, a signal): RateRPS is then only what was known
	// so far.
	Interrupted string `json:"interrupted,omitempty"`
	// LowRPS and HighRPS are the search bracket: the highest passing rate
	// and the lowest failing one above it (HighRPS 0: none failed up to
	// the maximum tried). It says where the search stopped, not how sure
	// the capacity is: see Interval.
	LowRPS  float64 `json:"low_rps"`
	HighRPS float64 `json:"high_rps"`
	// Interval is the confidence interval of the capacity: the highest
	// rate decided to pass and the lowest decided to fail above it.
	Interval *CapacityInterval `json:"interval,omitempty"`
	// Inconclusive says why the search could not find the capacity it
	// reports (trials too short to tell, a load the generator could not
	// send); spate capacity then exits 4.
	Inconclusive string `json:"inconclusive,omitempty"`
	// Resolution is the relative width (high−low)/high the search stopped at.
	Resolution float64 `json:"resolution"`
	// Repeats is the number of trials at each rate; a rate passes when a
	// majority of its trials do.
	Repeats int `json:"repeats"`
	// GoodputMin and GoodputMax are the spread of goodput over the trials
	// at RateRPS (repeated-trial noise).
	GoodputMin float64 `json:"goodput_min"`
	GoodputMax float64 `json:"goodput_max"`
	// ClosedLoopMaxRPS is, for a sweep, the throughput measured closed-loop
	// at Concurrency.
	ClosedLoopMaxRPS float64 `json:"closed_loop_max_rps,omitempty"`
	Concurrency      int     `json:"concurrency,omitempty"`
	// Saturated says the search saw the server saturate, and why.
	Saturated        bool            `json:"saturated"`
	SaturationReason string          `json:"saturation_reason,omitempty"`
	Trials           []CapacityTrial `json:"trials"`
	Warnings         []string        `json:"warnings,omitempty"`
}

// CapacityTrial is one trial of a capacity search.
type CapacityTrial struct {
	// Scenario is the name of the trial's scenario in the result.
	Scenario    string  `json:"scenario"`
	RateRPS     float64 `json:"rate_rps,omitempty"`
	Concurrency int     `json:"concurrency,omitempty"`
	AchievedRPS float64 `json:"achieved_rps"`
	Goodput     float64 `json:"goodput"`
	Valid       bool    `json:"valid"`
	Pass        bool    `json:"pass"`
	// Reason says why a trial failed: goodput, invalid, errors,
	// underdelivered, queue_growing or ttft_growing; too_short marks a
	// trial that could not tell, closed_loop a sweep's closed-loop
	// measurement, which is not judged.
	Reason string `json:"reason,omitempty"`
	// CompletedRPS is the successes per second over the trial's steady
	// seconds (SteadyS), and Delivered those successes over the requests
	// sent for them; Score is the smallest of Delivered/min_delivered and
	// goodput/goodput_target (≥ 1 meets both).
	CompletedRPS float64 `json:"completed_rps,omitempty"`
	Delivered    float64 `json:"delivered,omitempty"`
	SteadyS      int     `json:"steady_s,omitempty"`
	Score        float64 `json:"score,omitempty"`
	// Retry marks a trial that repeats an invalid one at the same rate.
	Retry bool `json:"retry,omitempty"`
	// Confirm marks a trial repeated at a bracket end to decide it.
	Confirm bool `json:"confirm,omitempty"`
}

// CapacityInterval is a confidence interval of the capacity, the rate at
// which trials pass as often as they fail: LowRPS is the highest rate
// decided to pass and HighRPS the lowest decided to fail above it, each at
// Capacity.Confidence, so that the interval holds the capacity at
// Confidence (1 − both errors) and holds any rate the trials could not
// decide. EstimateRPS is where the fraction of trials passing crosses 1/2
// between the tried rates inside it.
type CapacityInterval struct {
	LowRPS      float64 `json:"low_rps"`
	HighRPS     float64 `json:"high_rps"`
	EstimateRPS float64 `json:"estimate_rps"`
	Confidence  float64 `json:"confidence"`
	// Trials is the number of judged trials at each end (low, high).
	Trials [2]int `json:"trials"`
}
