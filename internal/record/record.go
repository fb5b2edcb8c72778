// Package record defines the per-request record that flows from a protocol
// client, through the engine, to metrics: the timestamps and counts of one
// request, and nothing that interprets them.
//
// Stage: record.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package record

import (
	"errors"
	"strconv"
	"syscall"
	"time"
)

// ErrorKind classifies a failed request. The empty kind means success.
type ErrorKind string

// Error kinds, as reported under requests.errors in the result file. HTTP
// status errors are reported as "http_<code>" (see HTTPStatus).
const (
	OK            ErrorKind = ""
	Timeout       ErrorKind = "timeout"
	Connect       ErrorKind = "connect"
	StreamBroken  ErrorKind = "stream_broken"
	EmptyOutput   ErrorKind = "empty_output"
	RateLimited   ErrorKind = "http_429"
	BadResponse   ErrorKind = "bad_response"
	Cancelled     ErrorKind = "cancelled"
	RequestFailed ErrorKind = "request_failed"
	// ConnectReset is a connection that died (reset, closed) before any
	// response.
	ConnectReset ErrorKind = "connect_reset"
	// RedirectLoop is a request redirected too many times.
	RedirectLoop ErrorKind = "redirect_loop"
	// BadUsage is a response whose usage counts are negative or absurd:
	// they are not summed.
	BadUsage ErrorKind = "bad_usage"
	// TooLarge is a response over one of the run's limits (its kept text,
	// its body, its model id).
	TooLarge ErrorKind = "too_large"
	// LocalFileLimit is a request this machine could not make: the
	// process (EMFILE) or the system (ENFILE) had no file descriptor left
	// for its connection. The limit is the load generator's, not the
	// target's: the stage is invalid.
	LocalFileLimit ErrorKind = "local_file_limit"
)

// OutOfFiles reports whether err is this machine's want of a file
// descriptor (EMFILE, ENFILE), which a client records as LocalFileLimit
// rather than as the target's connect error.
func OutOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// ErrDrained is the cause (context.Cause) the engine cancels requests
// with when its drain timeout runs out: a client records such a request
// as a Timeout, not as Cancelled, which is for an interrupted run.
var ErrDrained = errors.New("still running when the drain timeout ended")

// HTTPStatus returns the error kind of an HTTP error status.
func HTTPStatus(code int) ErrorKind {
	switch {
	case code == 429:
		return RateLimited
	case code >= 400 && code < 600:
		return ErrorKind(httpKinds[code-400])
	}
	return ErrorKind("http_" + strconv.Itoa(code))
}

var httpKinds = func() [200]string {
	var k [200]string
	for i := range k {
		k[i] = "http_" + strconv.Itoa(400+i)
	}
	return k
}()

// TokenSource says where a request's output token count came from.
type TokenSource uint8

// Token sources.
const (
	TokensNone      TokenSource = iota // no count (e.g. failed before output)
	TokensUsage                        // the server's usage field
	TokensTokenizer                    // the local tokenizer
)

// String names the source as the result file does.
func (s TokenSource) String() string {
	switch s {
	case TokensUsage:
		return "usage"
	case TokensTokenizer:
		return "tokenizer"
	}
	return "none"
}

// Record is what happened to one request. A protocol client fills the fields
// from Sent on; the engine fills Seq, Intended, Sent and Warmup. Slices are
// reused between requests: consumers must not keep them.
type Record struct {
	Seq      uint64
	Warmup   bool      // sent during warm-up: excluded from figures
	Intended time.Time // scheduled send time (equal to Sent in closed loop)
	// SlotWait is the part of the schedule lag caused by waiting for
	// --max-concurrency slots, this request's or earlier ones' that put the
	// generator behind schedule.
	SlotWait time.Duration
	Sent     time.Time // when the client started sending the request
	// Turnaround is, in a closed loop, how long the worker took from its
	// previous request's end to this send: the generator's own delay (0
	// for a worker's first request, and in an open loop).
	Turnaround time.Duration
	// ClosedLoop says a closed-loop worker sent it: its next request
	// waits for this one's end (a client need not batch that end with
	// others).
	ClosedLoop bool
	Written    time.Time // when the request was fully written (zero if never)

	FirstToken     time.Time // first content-bearing event (any kind)
	FirstReasoning time.Time // first reasoning-text event
	FirstAnswer    time.Time // first answer-text or tool-call event
	End            time.Time // end of response (or of the failure)

	// Gaps holds the inter-token latencies: gaps between successive
	// content-bearing events.
	Gaps []time.Duration
	// ChunkTokens holds the token count of each content-bearing event, when
	// known (see FillChunkTokens in the client); may be empty.
	ChunkTokens []int32
	// Chunks is the number of content-bearing events.
	Chunks int
	// ReadLag is how late the response's reads came after their data
	// arrived, the largest (measured against the kernel's receive time, or
	// bounded), when the client could tell (its reactor); 0 otherwise.
	ReadLag time.Duration
	// LateEvents counts the content events whose timestamp may be off by
	// more than 1 ms (they shared a late read with a later event, or had
	// no receive time and were read late), when ReadLag is measured.
	LateEvents int
	// LateFirst says the first content event was one of LateEvents, so
	// that TTFT may be off by more than 1 ms; LateGaps counts the Gaps
	// with a late event at either end.
	LateFirst bool
	LateGaps  int
	// FirstBound, when LateFirst, is how much earlier than its stamp the
	// first content event's bytes may have come (the read's bound): the
	// request's true TTFT lies between TTFT minus FirstBound and TTFT.
	FirstBound time.Duration
	// EndBound, when over 0, is how much earlier than End the response's
	// last bytes may have come: its read was late and had no kernel
	// receive time, so the true E2E lies between E2E minus EndBound and
	// E2E. A kernel-stamped end is exact (the last bytes of a read carry
	// the read's stamp).
	EndBound time.Duration

	InputTokens     int
	OutputTokens    int
	OutputSource    TokenSource
	UsageTokens     int // output tokens per usage, -1 when absent
	TokenizerTokens int // output tokens per local tokenizer, -1 when not counted
	// UsageReasoning is the reasoning tokens usage says are among
	// UsageTokens (completion_tokens_details.reasoning_tokens), 0 when it
	// does not say: a server that does not stream its reasoning counts
	// tokens the stream never carried.
	UsageReasoning  int
	Status          int // HTTP status, 0 when none
	Err             ErrorKind
	ErrMsg          string
	Model           string // model id reported by the server, if any
	Intent          string // workload label, "" when none
	RequestedOutput int    // max_tokens asked for

	// TraceID and SpanID are the W3C trace context sent with the request
	// in its traceparent header (zero when none was sent).
	TraceID [16]byte
	SpanID  [8]byte
	// Attempts is how many times a retrying client sent the request (0 or
	// 1: once).
	Attempts int
	// PriorSpans are the span ids of the attempts before the last, in the
	// same trace (TraceID); SpanID is the last attempt's.
	PriorSpans [][8]byte
	// Upstream names the target that gave the final answer, when a run has
	// several ("" when one).
	Upstream string
	// RetryAfter is the wait a failed response asked for (its
	// Retry-After header, on a 429 or 503), 0 when none.
	RetryAfter time.Duration
	// Answer holds the response text (answer, or tool call arguments) when
	// the request asked for it to be kept (workload.Request.KeepAnswer),
	// for answer checks and probes.
	Answer []byte
	// Recall is recall@k of a vector search, −1 when the request was not one.
	Recall float64
	// NNHit reports that a vector search's results held the exact nearest
	// neighbour (the seed's Hit).
	NNHit bool
	// Steps are the timings of a multi-step request's steps, in order.
	Steps []Step
	// ToolCalls counts the tool calls in the response.
	ToolCalls int
	// Documents is the number of documents a rerank or score request
	// ranked (0 for other APIs).
	Documents int
	// Labels are the request's labels beyond Intent (e.g. cluster, turn),
	// for per-label breakdowns.
	Labels []Label
	// Checks are the outcomes of the request's answer checks, in order
	// (empty when it had none or failed before an answer).
	Checks []CheckResult
	// NormInput is the request's input in normalised tokens (text plus
	// weighted image patches and audio frames), 0 when not known.
	NormInput float64
	// Complexity is the request's complexity score, 0–100.
	Complexity float64
	// FinishReason is the response's finish_reason as the server sent it
	// (stop, length, tool_calls, content_filter, abort, ...), "" when it
	// sent none.
	FinishReason string
	// ExactOutput is set when the request asked for exactly
	// RequestedOutput tokens (ignore_eos): fewer delivered are dropped.
	ExactOutput bool
	// Entropy is the mean, over the response's tokens whose top logprobs
	// were read (EntropyTokens), of each token's entropy in nats estimated
	// from them with the tail bucket (see internal/metrics/ice.go);
	// TailMass is the mean probability outside the top lists and
	// EntropyBound the mean bound on the estimate's error.
	Entropy       float64
	EntropyTokens int
	TailMass      float64
	EntropyBound  float64
	// Phases are the request's HTTP phases (DNS, connect, TLS, write,
	// first byte), each present only when it happened (see Phases).
	Phases Phases

	// PacedTokens is what token-rate pacing counted for the request (its
	// expected tokens), 0 when the stage is not paced in tokens or for a
	// conversation's later turns (the first carries the conversation's).
	PacedTokens float64
}

// Label is one key=value label of a request.
type Label struct {
	Key, Value string
}

// CheckResult is the outcome of one answer check.
type CheckResult struct {
	Name string
	Pass bool
}

// ChecksPassed reports whether the request had checks and passed them all.
func (r *Record) ChecksPassed() bool {
	for _, c := range r.Checks {
		if !c.Pass {
			return false
		}
	}
	return len(r.Checks) > 0
}

// Step is the timing of one step of a multi-step request (a workflow).
type Step struct {
	Name       string
	Start, End time.Time
	Err        ErrorKind
	// SpanID is the span of the step's request in the record's trace
	// (zero when no traceparent was sent).
	SpanID [8]byte
	// FirstToken is the step's first content-bearing event, Gaps the gaps
	// between its content events and Chunks their number, for a streamed
	// (SSE) step; zero otherwise. Tokens is its output tokens: the usage
	// the stream reported, else Chunks.
	FirstToken time.Time
	Gaps       []time.Duration
	Chunks     int
	Tokens     int
	// TokensFromUsage says Tokens is the server's usage, not Chunks.
	TokensFromUsage bool
	// ReadLag is how late the step's reads came after their data, or how
	// far apart the bytes of one read came, the largest: how far any of
	// its stamps (events, end) may be from when its bytes came. 0 when its
	// connection did not stamp reads.
	ReadLag time.Duration
}

// Reset clears r for reuse, keeping its slices' capacity.
func (r *Record) Reset() {
	gaps, ct, ans, steps, labels, checks := r.Gaps[:0], r.ChunkTokens[:0], r.Answer[:0], r.Steps[:0], r.Labels[:0], r.Checks[:0]
	*r = Record{Gaps: gaps, ChunkTokens: ct, Answer: ans, Steps: steps, Labels: labels, Checks: checks,
		UsageTokens: -1, TokenizerTokens: -1, Recall: -1}
}

// Failed reports whether the request failed.
func (r *Record) Failed() bool { return r.Err != OK }

// Fail marks the request failed with kind and message, at time t.
func (r *Record) Fail(kind ErrorKind, msg string, t time.Time) {
	r.Err, r.ErrMsg = kind, msg
	if r.End.IsZero() {
		r.End = t
	}
}

// TTFT is the time from send to the first content-bearing event.
func (r *Record) TTFT() (time.Duration, bool) {
	if r.FirstToken.IsZero() {
		return 0, false
	}
	return r.FirstToken.Sub(r.Sent), true
}

// E2E is the time from send to the end of the response.
func (r *Record) E2E() time.Duration { return r.End.Sub(r.Sent) }

// TPOT is (E2E − TTFT) / (output_tokens − 1), for requests with at least
// two output tokens.
func (r *Record) TPOT() (time.Duration, bool) {
	if r.OutputTokens < 2 {
		return 0, false
	}
	ttft, ok := r.TTFT()
	if !ok {
		return 0, false
	}
	return (r.E2E() - ttft) / time.Duration(r.OutputTokens-1), true
}

// Lag is the schedule lag: actual send minus intended send.
func (r *Record) Lag() time.Duration { return r.Sent.Sub(r.Intended) }
