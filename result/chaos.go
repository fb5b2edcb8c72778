package result

// Chaos holds a stage's fault windows and the resilience figures they
// give (docs/design.md §3: MSR, recovery time), filled by package chaos.
type Chaos struct {
	// Windows are the fault windows that overlapped the stage, in order.
	Windows []ChaosWindow `json:"windows"`
	// Injected counts the faults the proxy injected during the stage, by
	// kind; FaultsInjected sums the kinds that fail a request by
	// themselves (error, rate_limit, reset, blackhole, truncate).
	Injected       map[string]int64 `json:"injected,omitempty"`
	FaultsInjected int64            `json:"faults_injected"`
	// ErrorsSeen is the number of measured requests that failed for the
	// user (after the client's retries and failovers).
	ErrorsSeen int `json:"errors_seen"`
	// ErrorAmplification is ErrorsSeen / FaultsInjected: below 1 the
	// clients absorbed faults, above 1 a fault cost more than one request.
	ErrorAmplification *float64 `json:"error_amplification,omitempty"`
	// Retried is the number of requests sent more than once, and
	// RetryAttempts the attempts after the first they made; RetriedOK
	// those of them that finally succeeded; RRetry = RetriedOK /
	// RetryAttempts (retry convergence per retry attempt, seed 004 §3.3).
	Retried       int `json:"retried"`
	RetryAttempts int `json:"retry_attempts"`
	// Attempts is the number of attempts all measured requests made
	// (retries and failovers included).
	Attempts  int      `json:"attempts"`
	RetriedOK int      `json:"retried_ok"`
	RRetry    *float64 `json:"r_retry,omitempty"`
	// FailoverMS is the slowest failover time of the failing windows
	// whose failover completed: from a window's onset to the first token of
	// the first successful response among the requests it reached (sent in
	// it, with a failed attempt).
	FailoverMS *float64 `json:"failover_ms,omitempty"`
	// TMaxMS is T_max of MSR (800 ms by default).
	TMaxMS float64 `json:"t_max_ms"`
	// MSR = (1 − min(FailoverMS / TMaxMS, 1)) × RRetry, graded high
	// (≥ 0.9), medium (≥ 0.7) or low.
	MSR      *float64 `json:"msr,omitempty"`
	MSRGrade string   `json:"msr_grade,omitempty"`
	// MSRReason says why there is no MSR (no failing window, no failover
	// needed, no retries), or why it is 0 (the failover did not complete).
	MSRReason string `json:"msr_reason,omitempty"`
	// RecoveryMS is the slowest recovery time of the failing windows: from
	// a fault's end to the first bin of RecoveryBinMS whose requests are
	// back to the baseline error rate and E2E p99 (see docs/chaos.md);
	// none when a window never recovered.
	RecoveryMS    *float64 `json:"recovery_ms,omitempty"`
	RecoveryBinMS float64  `json:"recovery_bin_ms,omitempty"`
	// Upstreams counts measured requests by the upstream that gave the
	// final answer, when a run has several.
	Upstreams map[string]int `json:"upstreams,omitempty"`
	Warnings  []string       `json:"warnings,omitempty"`
}

// ChaosWindow is one rule's time window and how requests fared inside it
// and outside every window.
type ChaosWindow struct {
	// Faults is the rule, as the proxy's JSON.
	Faults string `json:"faults"`
	// StartS and EndS are offsets from the stage's start, in seconds;
	// EndS is the stage's end when the window was still open.
	StartS  float64 `json:"start_s"`
	EndS    float64 `json:"end_s"`
	Failing bool    `json:"failing"`
	// Inside counts requests sent inside this window; Outside those sent
	// outside it (during the stage).
	Inside  ChaosSide `json:"inside"`
	Outside ChaosSide `json:"outside"`
	// FailoverMS and RecoveryMS are this window's (failing windows only).
	FailoverMS *float64 `json:"failover_ms,omitempty"`
	RecoveryMS *float64 `json:"recovery_ms,omitempty"`
}

// ChaosSide is the requests of one side of a window.
type ChaosSide struct {
	Requests  int     `json:"requests"`
	Errors    int     `json:"errors"`
	ErrorRate float64 `json:"error_rate"`
	// ErrorRateCI95 is the Wilson 95 % interval of ErrorRate. It treats
	// requests as independent, which requests of one run are not: read
	// it as a lower bound on the uncertainty.
	ErrorRateCI95 [2]float64 `json:"error_rate_ci95"`
	// E2E percentiles of the requests that succeeded, in ms.
	E2EP50MS float64 `json:"e2e_p50_ms"`
	E2EP99MS float64 `json:"e2e_p99_ms"`
}
