// Package result defines spate's result file (schema "spate/result/v1",
// docs/design.md §4) and reads and writes it. It holds types and I/O only; the
// figures are computed by package metrics.
//
// Stage: outputs (the file every later tool reads: report, compare, merge).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package result

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spate-dev/spate/internal/capread"
	"github.com/spate-dev/spate/internal/outfile"
)

// Schema is the value of the schema field of every result file.
const Schema = "spate/result/v1"

// Result is one run: one scenario per stage.
type Result struct {
	Schema       string    `json:"schema"`
	SpateVersion string    `json:"spate_version"`
	StartedAt    time.Time `json:"started_at"`
	EndedAt      time.Time `json:"ended_at"`
	// Interrupted is true when the run was stopped early (Ctrl-C, SIGTERM)
	// and the result holds what was measured until then.
	Interrupted bool `json:"interrupted"`
	// Aborted says which abortOnFail threshold stopped the run, if one did.
	Aborted string `json:"aborted,omitempty"`
	// Error says why the run could not start (the target unreachable, a
	// file that cannot be read): the result then holds no scenario.
	Error            string     `json:"error,omitempty"`
	Fingerprint      string     `json:"fingerprint"`
	Provenance       Provenance `json:"provenance"`
	Config           Config     `json:"config"`
	ThresholdsPassed bool       `json:"thresholds_passed"`
	// Verdict is the run's verdict: pass (every threshold passed on a
	// valid measurement), fail (a threshold failed), invalid (thresholds
	// passed but a stage's measurement was not valid: exit 4 unless
	// allowed) or error (the run could not complete).
	Verdict   string     `json:"verdict,omitempty"`
	Scenarios []Scenario `json:"scenarios"`
	// Histograms holds, per scenario name and metric name (the keys of
	// Scenario.Metrics), the HDR histogram of values in microseconds (token
	// counts for tokens_per_chunk), in HdrHistogram's V2 compressed base64
	// encoding, so that shards merge exactly.
	Histograms map[string]map[string]string `json:"histograms"`
	// Gate is the verdict and the actions it led to, when the experiment
	// file maps verdicts to actions.
	Gate *Gate `json:"gate,omitempty"`
	// Warnings are things about the run as a whole that a reader should know.
	Warnings []string `json:"warnings,omitempty"`
	// Shard says which part of a sharded run this result is, or which
	// shards a merged result was made of (see shard.go).
	Shard *Shard `json:"shard,omitempty"`
	// Capacity is the outcome of a capacity search (see verdict.go).
	Capacity *Capacity `json:"capacity,omitempty"`
}

// Gate records a verdict and how its actions went.
type Gate struct {
	Verdict string       `json:"verdict"`
	Actions []GateAction `json:"actions"`
}

// GateAction is how one action went.
type GateAction struct {
	Action  string  `json:"action"`
	OK      bool    `json:"ok"`
	Error   string  `json:"error,omitempty"`
	Output  string  `json:"output,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Provenance identifies what was measured.
type Provenance struct {
	Model          string `json:"model"`
	SUTVersion     string `json:"sut_version,omitempty"`
	WorkloadSHA256 string `json:"workload_sha256"`
	// WorkloadSpecSHA256 is the digest of what the workload is made of
	// with its seed left out (the workload settings and the contents of
	// the files they name): runs that differ only in their seed share it,
	// and spate compare takes them as replicates.
	WorkloadSpecSHA256 string `json:"workload_spec_sha256,omitempty"`
	Target             string `json:"target"` // base URL, with credentials removed
	API                string `json:"api"`
	Tokenizer          string `json:"tokenizer"`
	// ExperimentSHA256 is the digest of the experiment file, when one was used.
	ExperimentSHA256 string `json:"experiment_sha256,omitempty"`
	// Server is what the target said of itself in its answer to the
	// model listing sent before the load: software, HTTP version,
	// context length, clock offset (absent when it gave no listing).
	Server *ServerInfo `json:"server,omitempty"`
}

// Config echoes the load settings of the run. Secrets are never included.
type Config struct {
	Arrival        string   `json:"arrival,omitempty"`
	Burstiness     float64  `json:"burstiness,omitempty"`
	Rate           float64  `json:"rate,omitempty"`
	Concurrency    int      `json:"concurrency,omitempty"`
	MaxConcurrency int      `json:"max_concurrency,omitempty"`
	Duration       string   `json:"duration,omitempty"`
	Requests       int      `json:"requests,omitempty"`
	Warmup         string   `json:"warmup,omitempty"`
	InputTokens    string   `json:"input_tokens,omitempty"`
	OutputTokens   string   `json:"output_tokens,omitempty"`
	Dataset        string   `json:"dataset,omitempty"`
	Stream         bool     `json:"stream"`
	SLO            string   `json:"slo,omitempty"`
	Seed           uint64   `json:"seed"`
	Thresholds     []string `json:"thresholds,omitempty"`
	Experiment     string   `json:"experiment,omitempty"` // path of the experiment file
	Workload       string   `json:"workload,omitempty"`   // path of the --workload file
	// ComplexityShaping is true when the first stage's open-loop rate was
	// scaled by each request's complexity (--complexity-shaping).
	ComplexityShaping bool `json:"complexity_shaping,omitempty"`
	// SLOFrom is the send time an open-loop stage's SLO thresholds were
	// judged from: "intended" (default) or "sent".
	SLOFrom string `json:"slo_from,omitempty"`
	// AllowInvalid is true when an invalid measurement was accepted
	// (--allow-invalid): the run exits 0 instead of 4.
	AllowInvalid bool `json:"allow_invalid,omitempty"`
}

// ThresholdOutcome is the verdict on one threshold, as written to a
// scenario's thresholds[].
type ThresholdOutcome struct {
	// Expr is the expression as the user wrote it (its canonical form when
	// the threshold was built without one).
	Expr string `json:"expr"`
	// Value is the observed value, in the threshold's unit (ms for
	// latencies); 0 when Err is set.
	Value float64 `json:"value"`
	// Pass reports whether the observed value met the threshold. It is false
	// whenever Err is set.
	Pass bool `json:"pass"`
	// Err says why the threshold could not be checked: the figure is
	// missing, not a finite number, or the threshold itself is invalid.
	Err string `json:"error,omitempty"`
	// Unjudged marks an outcome with no verdict: its figure was not
	// measured (no samples, no fault to recover from, a trigger whose
	// figures were missing where it might have fired). It is not a pass,
	// but not a failure either: alone, it makes the run's verdict
	// "cannot judge" (exit 4), and any failed threshold wins over it.
	Unjudged bool `json:"unjudged,omitempty"`

	// Trigger marks a trigger (delta(p95(e2e)) > 300ms for 2m and ...):
	// watched while the stage ran, it fails when it fired. Fired counts
	// its firings (once per hold of its conditions); FiredAtS is when it
	// first fired, in seconds from the stage's start.
	Trigger  bool     `json:"trigger,omitempty"`
	Fired    int      `json:"fired,omitempty"`
	FiredAtS *float64 `json:"fired_at_s,omitempty"`
	// From is "intended" when the figure was judged from the intended
	// send time (the default for ttft, e2e and goodput in an open-loop
	// stage: measurement.sloFrom).
	From string `json:"from,omitempty"`
	// Low and High, when set, are the range the figure's true value lies
	// in given the stage's measurement error (Scenario.MeasurementError):
	// the outcome is the same at both ends (else it is Unjudged and Err
	// says so).
	Low  *float64 `json:"low,omitempty"`
	High *float64 `json:"high,omitempty"`
	// Interval is the figure's sampling interval (Intervals.Level), when
	// it has one: how far a run of the same load might land from it.
	Interval *Range `json:"interval,omitempty"`
}

// Scenario is the measurement of one stage.
type Scenario struct {
	Name       string             `json:"name"`
	StartedAt  time.Time          `json:"started_at"`
	DurationS  float64            `json:"duration_s"`
	Load       Load               `json:"load"`
	Requests   Requests           `json:"requests"`
	Throughput Throughput         `json:"throughput"`
	Tokens     Tokens             `json:"tokens"`
	Metrics    map[string]Dist    `json:"metrics"`
	Goodput    Goodput            `json:"goodput"`
	Thresholds []ThresholdOutcome `json:"thresholds"`
	Series     Series             `json:"series"`
	Warnings   []string           `json:"warnings,omitempty"`
	// MeasurementError is how far the load generator's own lateness in
	// reading responses may have moved the figures (see error.go); nil
	// when it moved none by over 1 ms, or was not measured.
	MeasurementError *MeasurementError `json:"measurement_error,omitempty"`
	// Intervals are the sampling intervals of the figures (see error.go).
	Intervals *Intervals `json:"intervals,omitempty"`

	// Breakdown holds the figures per label value: Breakdown["intent"]["faq"]
	// (see breakdown.go).
	Breakdown map[string]map[string]Group `json:"breakdown,omitempty"`
	// Checks are the answer checks' pass rates and sTPS (see breakdown.go).
	Checks *Checks `json:"checks,omitempty"`
	// Server holds the system under test's own metrics scraped during the
	// stage, on the stage's time line (see server.go).
	Server *Server `json:"server,omitempty"`
	// Resilience holds slope and recovery figures (see verdict.go).
	Resilience *Resilience `json:"resilience,omitempty"`
	// Chaos holds fault windows and failover figures (see chaos.go).
	Chaos *Chaos `json:"chaos,omitempty"`
	// Vector holds recall beside latency for vector search (see vector.go).
	Vector *Vector `json:"vector,omitempty"`
	// Workflow holds per-step timing of multi-step requests (see vector.go).
	Workflow *Workflow `json:"workflow,omitempty"`
	// Probes holds security probe figures (see probe.go).
	Probes *Probes `json:"probes,omitempty"`
	// Output says how answers ended: finish reasons, truncation, dropped
	// tokens and the figures by input length (see output.go).
	Output *Output `json:"output,omitempty"`
	// ICE is the inference consistency entropy of conversations that asked
	// for logprobs (see output.go).
	ICE *ICE `json:"ice,omitempty"`
}

// Load says what load was asked for and what was delivered.
type Load struct {
	Mode       string  `json:"mode"` // "open" or "closed"
	Arrival    string  `json:"arrival,omitempty"`
	TargetRate float64 `json:"target_rate,omitempty"`
	RampFrom   float64 `json:"ramp_from,omitempty"`
	// Stampede is the stage's cache stampedes (bursts on top of the rate),
	// as --stampede takes them.
	Stampede string `json:"stampede,omitempty"`
	// Warmup is the stage's own warm-up (a Go duration, "2s"): the seconds
	// at the start of its series that are left out of its figures, and
	// that compare leaves out of its windows.
	Warmup string `json:"warmup,omitempty"`
	// Shaped is true when complexity shaping scaled each gap of the
	// schedule (see Config.ComplexityShaping).
	Shaped         bool    `json:"shaped,omitempty"`
	ScheduledRate  float64 `json:"scheduled_rate,omitempty"`
	AchievedRate   float64 `json:"achieved_rate"`
	Concurrency    int     `json:"concurrency,omitempty"`
	MaxConcurrency int     `json:"max_concurrency,omitempty"`
	ScheduleLagMS  Dist    `json:"schedule_lag_ms"`
	SlotWaitMS     Dist    `json:"slot_wait_ms"`
	SendDelayMS    Dist    `json:"send_delay_ms"`
	// LagBoundMS is the bound the stage's lag was judged against (see
	// Validity.BoundMS).
	LagBoundMS float64 `json:"lag_bound_ms"`
	// ReadLagMS is the distribution of requests' read lag (how late the
	// client read responses after their data arrived, the largest of each
	// request's reads), when the client measures it; LateEvents is the
	// fraction of content events whose timestamp may be off by over 1 ms,
	// LateFirstTokens the fraction of requests whose first token's is
	// (their TTFT may be), LateGaps the fraction of inter-token gaps with
	// such an event at either end; over 1 % in any of the three, the
	// stage is not valid (check late_events, cause reader_lag when nothing
	// else failed).
	ReadLagMS       *Dist    `json:"read_lag_ms,omitempty"`
	LateEvents      *float64 `json:"late_events,omitempty"`
	LateFirstTokens *float64 `json:"late_first_tokens,omitempty"`
	LateGaps        *float64 `json:"late_gaps,omitempty"`
	// Missed counts the measured requests of an open-loop schedule that
	// were not sent by the stage's deadline: the schedule's end plus
	// GraceMS.
	Missed  int     `json:"missed"`
	GraceMS float64 `json:"grace_ms,omitempty"`
	Valid   bool    `json:"valid"`
	// InvalidCause says who made the stage invalid: concurrency_cap,
	// server_backpressure, missed_sends, reader_lag, generator_saturated,
	// generator_file_limit (this machine ran out of file descriptors) or
	// faults_not_applied (the chaos proxy saw none of its requests).
	InvalidCause  string `json:"invalid_cause,omitempty"`
	InvalidReason string `json:"invalid_reason,omitempty"`
	// Validity holds the facts the validity rule judged (docs/figures.md).
	Validity *Validity `json:"validity,omitempty"`

	// TargetTokenRate is the tokens per second a token-paced stage was
	// asked for, counted on TokenRateBasis: total (input + output) or
	// output; AchievedTokenRate is what its sends offered, an estimate:
	// the expected tokens (prompt tokens and max_tokens) of the requests
	// sent per second. ServedTokenRate is measured: the tokens of those
	// requests that succeeded, their output as counted (ServedTokenSource:
	// "usage", "tokenizer" or "usage and tokenizer"), per second of the
	// same sends; it falls short of the offered rate when answers end
	// before max_tokens, and is absent when a success had no count.
	TargetTokenRate   float64 `json:"target_token_rate,omitempty"`
	TokenRateBasis    string  `json:"token_rate_basis,omitempty"`
	AchievedTokenRate float64 `json:"achieved_token_rate,omitempty"`
	ServedTokenRate   float64 `json:"served_token_rate,omitempty"`
	ServedTokenSource string  `json:"served_token_source,omitempty"`
	// HTTPPhases are the HTTP phases of the stage's requests (see
	// HTTPPhases), nil when the client measured none.
	HTTPPhases *HTTPPhases `json:"http_phases,omitempty"`
}

// Validity is how a stage's measurement was judged: the checks that failed
// and the figures they read. Lags are the open loop's arrival lags
// (intended time to the request written) or the closed loop's turnarounds.
type Validity struct {
	// Failed lists the checks that failed: missed_sends, rate_short,
	// lag_large, lag_growing (open loop), turnaround_large (closed loop),
	// late_events (either).
	Failed []string `json:"failed,omitempty"`
	// BoundMS is the lag bound: the largest of FloorMS, twice MedianGapMS
	// and a tenth of LatencyP50MS.
	BoundMS      float64 `json:"bound_ms"`
	FloorMS      float64 `json:"floor_ms"`
	MedianGapMS  float64 `json:"median_gap_ms,omitempty"`
	LatencyP50MS float64 `json:"latency_p50_ms"`
	// Sends counts the sends judged; LateSends those over the bound, of
	// which WorstStallSends are forgiven as one brief stall: the longest
	// run of late sends in a row, up to max(5, 10 % of the sends).
	Sends           int     `json:"sends"`
	LateSends       int     `json:"late_sends"`
	WorstStallSends int     `json:"worst_stall_sends"`
	Missed          int     `json:"missed,omitempty"`
	LagP99MS        float64 `json:"lag_p99_ms"`
	// RateRatio is the sends' rate over the scheduled rate, on the
	// middle 90 % of the sends.
	RateRatio float64 `json:"rate_ratio,omitempty"`
	// LagSlopeMSPerS and LagSlopeT are the least-squares slope of the lag
	// over the stage and its t statistic; LastTenthLagMS is the median lag
	// over the last tenth of the stage.
	LagSlopeMSPerS float64 `json:"lag_slope_ms_per_s,omitempty"`
	LagSlopeT      float64 `json:"lag_slope_t,omitempty"`
	LastTenthLagMS float64 `json:"last_tenth_lag_ms,omitempty"`
	// Events counts the content events whose read lag was measured,
	// LateEvents those whose timestamp may be off by over 1 ms;
	// FirstTokens and LateFirstTokens, Gaps and LateGaps the same for
	// first tokens and inter-token gaps (Load.LateEvents and the others
	// are these shares; check late_events judges them).
	Events          int `json:"events,omitempty"`
	LateEvents      int `json:"late_events,omitempty"`
	FirstTokens     int `json:"first_tokens,omitempty"`
	LateFirstTokens int `json:"late_first_tokens,omitempty"`
	Gaps            int `json:"gaps,omitempty"`
	LateGaps        int `json:"late_gaps,omitempty"`
	// TTFTShiftMS is how much higher than the truth the late first tokens
	// can make TTFT's figures (p50 to p99.9 and mean): the largest
	// difference, at TTFTShiftAt; over 1 ms, check late_events fails,
	// however few the late first tokens are.
	TTFTShiftMS float64 `json:"ttft_shift_ms,omitempty"`
	TTFTShiftAt string  `json:"ttft_shift_at,omitempty"`
}

// Requests counts outcomes. Warm-up requests are counted only in Warmup.
type Requests struct {
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	// Abandoned counts the cancelled requests whose client had not
	// returned half a second after being cancelled (the run ended without
	// them).
	Abandoned int            `json:"abandoned,omitempty"`
	Warmup    int            `json:"warmup"`
	Errors    map[string]int `json:"errors"`
	// ErrorSamples holds the first message seen for each error kind.
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
}

// Throughput is per second of the measurement window.
type Throughput struct {
	RequestsPerS     float64 `json:"requests_per_s"`
	InputTokensPerS  float64 `json:"input_tokens_per_s"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	TotalTokensPerS  float64 `json:"total_tokens_per_s"`
	// STPS is semantic tasks per second, as the seed defines sTPS: tasks
	// completed per second of the window, a task being a request (a
	// workflow, a conversation's turn) that succeeded and, when it had
	// answer checks, passed them all (stps in thresholds).
	STPS float64 `json:"stps"`
	// NormalizedTokensPerS is (normalised input + output tokens) per
	// second: text tokens weigh 1, image patches and audio frames their
	// workload weights (default 64 and 8). Set only when every successful
	// request's normalised input was known (not for conversations, whose
	// history the workload cannot weigh).
	NormalizedTokensPerS float64 `json:"normalized_tokens_per_s,omitempty"`
	// DocumentsPerS is the documents ranked per second by successful
	// rerank and score requests (absent for other APIs).
	DocumentsPerS float64 `json:"documents_per_s,omitempty"`
}

// Tokens says how many tokens flowed and where output counts came from.
type Tokens struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
	// OutputSource is "usage", "tokenizer", "mixed" or "none".
	OutputSource  string `json:"output_source"`
	FromUsage     int    `json:"requests_counted_by_usage"`
	FromTokenizer int    `json:"requests_counted_by_tokenizer"`
	Tokenizer     string `json:"tokenizer,omitempty"`
	// Discrepancy is Σ|usage − tokenizer| / Σ usage over the requests
	// counted both ways (DiscrepancySampled of them).
	Discrepancy        *float64 `json:"usage_tokenizer_discrepancy,omitempty"`
	DiscrepancySampled int      `json:"discrepancy_sampled,omitempty"`
	// UsageImplausible counts the responses counted both ways whose usage
	// claimed over twice the local count and over 16 tokens more, 16 more
	// a tool call (the usage check, docs/figures.md); UsageClaimed and
	// UsageCounted are their usage (less the reasoning tokens it reports)
	// and local counts added up.
	UsageImplausible int   `json:"usage_implausible,omitempty"`
	UsageClaimed     int64 `json:"usage_implausible_claimed,omitempty"`
	UsageCounted     int64 `json:"usage_implausible_counted,omitempty"`
	// UsageTrusted is the usage check's verdict, absent when usage was not
	// checked (no usage, or no response counted both ways): false when too
	// many responses' usage was implausible, UsageUntrusted saying why.
	// Output token figures are still the usage's, marked: thresholds on
	// them cannot be judged.
	UsageTrusted   *bool  `json:"usage_trusted,omitempty"`
	UsageUntrusted string `json:"usage_untrusted_reason,omitempty"`
}

// Goodput is the share of requests that succeeded and met every SLO.
// Fraction and RequestsPerS judge TTFT and E2E from the send; the intended
// twins from the intended send time, as users waiting behind a late
// generator or a concurrency cap felt them (equal in a closed loop).
type Goodput struct {
	Fraction             float64            `json:"fraction"`
	RequestsPerS         float64            `json:"requests_per_s"`
	IntendedFraction     float64            `json:"intended_fraction"`
	IntendedRequestsPerS float64            `json:"intended_requests_per_s"`
	SLOms                map[string]float64 `json:"slo_ms,omitempty"`
}

// Dist summarises a distribution. Latencies are in milliseconds.
type Dist struct {
	Count  int64   `json:"count"`
	Mean   float64 `json:"mean"`
	Stddev float64 `json:"stddev"`
	Min    float64 `json:"min"`
	P50    float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P95    float64 `json:"p95"`
	P99    float64 `json:"p99"`
	P999   float64 `json:"p999"`
	Max    float64 `json:"max"`
}

// Series is the per-second time line of a scenario; element i covers
// [i, i+1) seconds from the scenario's start. Latency percentiles are of
// the requests that completed in that second (0 when none did).
type Series struct {
	SentPerS      []int     `json:"sent_per_s"`
	CompletedPerS []int     `json:"completed_per_s"`
	ErrorsPerS    []int     `json:"errors_per_s"`
	InFlight      []int     `json:"in_flight_max"`
	OutputTokens  []int64   `json:"output_tokens_per_s"`
	TTFTp50ms     []float64 `json:"ttft_p50_ms"`
	TTFTp99ms     []float64 `json:"ttft_p99_ms"`
	TTFTMeanMS    []float64 `json:"ttft_mean_ms"`
	// E2E figures are of the requests that succeeded in that second.
	E2Ep50ms  []float64 `json:"e2e_p50_ms"`
	E2Ep99ms  []float64 `json:"e2e_p99_ms"`
	E2EMeanMS []float64 `json:"e2e_mean_ms"`

	// GoodPerS counts the requests completed in each second that succeeded
	// and met every SLO (every success when there is no SLO).
	GoodPerS []int `json:"good_per_s,omitempty"`
	// ITL, TPOT and the intended-time twins of TTFT and E2E, of the
	// requests that succeeded in each second (docs/design.md §3); a
	// second with none holds 0. ITL figures are of the gaps of those
	// requests.
	ITLp50ms           []float64 `json:"itl_p50_ms,omitempty"`
	ITLp99ms           []float64 `json:"itl_p99_ms,omitempty"`
	ITLMeanMS          []float64 `json:"itl_mean_ms,omitempty"`
	TPOTp50ms          []float64 `json:"tpot_p50_ms,omitempty"`
	TPOTp99ms          []float64 `json:"tpot_p99_ms,omitempty"`
	TPOTMeanMS         []float64 `json:"tpot_mean_ms,omitempty"`
	TTFTIntendedP50ms  []float64 `json:"ttft_intended_p50_ms,omitempty"`
	TTFTIntendedP99ms  []float64 `json:"ttft_intended_p99_ms,omitempty"`
	TTFTIntendedMeanMS []float64 `json:"ttft_intended_mean_ms,omitempty"`
	E2EIntendedP50ms   []float64 `json:"e2e_intended_p50_ms,omitempty"`
	E2EIntendedP99ms   []float64 `json:"e2e_intended_p99_ms,omitempty"`
	E2EIntendedMeanMS  []float64 `json:"e2e_intended_mean_ms,omitempty"`
}

// Write writes r as indented JSON to path, creating its directory.
// It writes to a temporary file first, so a reader never sees half a file;
// a path that is not a regular file (/dev/null, a FIFO, a link) stays what
// it is (see outfile.Write).
func Write(path string, r *Result) error {
	var buf bytes.Buffer
	if err := Encode(&buf, r); err != nil {
		return err
	}
	if err := outfile.Write(path, buf.Bytes()); err != nil {
		return fmt.Errorf("writing result %s: %w", path, err)
	}
	return nil
}

// Encode writes r as indented JSON, with < and > left as they are (they
// appear in threshold expressions).
func Encode(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encoding result: %w", err)
	}
	return nil
}

// Read reads a result file and checks its schema.
func Read(path string) (*Result, error) { return ReadContext(context.Background(), path) }

// ReadContext is Read with a read that stops when ctx is done: a FIFO
// nobody writes to cannot keep Ctrl-C from working.
func ReadContext(ctx context.Context, path string) (*Result, error) {
	b, err := capread.ReadFile(ctx, path, capread.DataLimit, "")
	if err != nil {
		return nil, fmt.Errorf("reading result: %w", err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) && strings.Contains(err.Error(), "after top-level value") {
			// One JSON value a line: a --records file, not a result.
			return nil, fmt.Errorf("reading result %s: it holds one JSON value a line, as a --records file does, not a result: give the result file (--out)", path)
		}
		return nil, fmt.Errorf("reading result %s: %w", path, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("reading result %s: schema %q, want %q", path, r.Schema, Schema)
	}
	return &r, nil
}

// HTTPPhases are the HTTP phases of a stage's measured requests
// (docs/figures.md, "HTTP phases"), in milliseconds: each a distribution
// over the requests that had the phase, its count beside. A request on a
// reused connection has no DNS, connect or TLS phase (absent, not 0), so
// those are over the requests that opened a connection; DNS only over
// those whose target was a name, TLS only over https ones. A phase no
// request had is absent.
type HTTPPhases struct {
	// DNSMS is the name lookup of a new connection.
	DNSMS *Dist `json:"dns_ms,omitempty"`
	// ConnectMS is the TCP connect of a new connection.
	ConnectMS *Dist `json:"connect_ms,omitempty"`
	// TLSMS is the TLS handshake of a new https connection.
	TLSMS *Dist `json:"tls_ms,omitempty"`
	// WriteMS is from the connection ready to the request written whole.
	WriteMS *Dist `json:"write_ms,omitempty"`
	// FirstByteMS is from the request written to the first byte of the
	// response: the server's time to first byte.
	FirstByteMS *Dist `json:"first_byte_ms,omitempty"`
}
