package result

// Output says how a stage's answers ended (seed 000 §4.1).
type Output struct {
	// FinishReasons counts the successful answers by finish_reason as
	// the server sent it; "missing" counts those that carried none.
	FinishReasons map[string]int `json:"finish_reasons"`
	// FinishLength counts answers that ended with "length", Truncated
	// those shorter than the max_tokens asked (the server's budget or
	// context window cut them, not the user's cap; see TruncationRate).
	FinishLength int `json:"finish_length"`
	Truncated    int `json:"truncated"`
	// TruncationRate is Truncated (answers with fewer tokens than the
	// max_tokens asked that ended with "length" or asked for exactly
	// max_tokens, ignore_eos) over the answers with a finish_reason or an
	// exact length asked; FinishLengthRate is FinishLength over those with a
	// finish_reason. Each is absent without any such answer.
	TruncationRate   *float64 `json:"truncation_rate,omitempty"`
	FinishLengthRate *float64 `json:"finish_length_rate,omitempty"`
	// Judged counts the answers TruncationRate is over (for merging).
	Judged int `json:"judged,omitempty"`
	// TokenDropRate is, over the ExactRequests that asked for exactly
	// max_tokens (ignore_eos), the tokens missing (DroppedTokens, failed
	// requests' whole shortfall included) over the tokens asked for.
	// Absent without such requests.
	TokenDropRate *float64 `json:"token_drop_rate,omitempty"`
	ExactRequests int      `json:"exact_requests,omitempty"`
	DroppedTokens int64    `json:"dropped_tokens,omitempty"`
	// ExpectedTokens are the tokens those requests asked for.
	ExpectedTokens int64 `json:"expected_tokens,omitempty"`
	// ContextRejected counts requests the server refused for their context
	// length (HTTP 400, maximum context length).
	ContextRejected int `json:"context_rejected,omitempty"`
	// Context is the figures by input-length bucket, the seed's
	// context-window curve.
	Context  []ContextBucket `json:"context,omitempty"`
	Warnings []string        `json:"warnings,omitempty"`
}

// ContextBucket is the requests of a stage whose input length is in
// [FromTokens, ToTokens) tokens (ToTokens 0: no upper edge). A failed
// request's input length is the workload's count (0 when unknown).
type ContextBucket struct {
	Bucket          string `json:"bucket"` // 0-512, 512-1k, ..., 64k-128k, 128k+
	FromTokens      int    `json:"from_tokens"`
	ToTokens        int    `json:"to_tokens,omitempty"`
	Requests        int    `json:"requests"`
	Failed          int    `json:"failed"`
	ContextRejected int    `json:"context_rejected"`
	Truncated       int    `json:"truncated"`
	// TruncationRate is Truncated over the bucket's successes.
	TruncationRate float64 `json:"truncation_rate"`
	Checked        int     `json:"checked,omitempty"`
	Passed         int     `json:"passed,omitempty"`
	// CheckPassRate is Passed / Checked, absent without checks.
	CheckPassRate *float64 `json:"check_pass_rate,omitempty"`
	// Metrics are ttft_ms, tpot_ms and e2e_ms of the bucket's successes
	// (two significant figures; the histograms are in the result's, as
	// ctx/BUCKET/METRIC).
	Metrics map[string]Dist `json:"metrics"`
}

// ICE is a stage's inference consistency entropy (seed 004 §3.2): the
// standard deviation of the mean token entropy over a conversation's
// turns, summarised over conversations.
type ICE struct {
	ICEFigures
	// Single counts conversations with fewer than two turns with
	// logprobs: they have no ICE.
	Single int `json:"single_turn,omitempty"`
	// Turns counts the answers with logprobs; MeanEntropy is their mean
	// token entropy (nats).
	Turns       int     `json:"turns"`
	MeanEntropy float64 `json:"mean_entropy"`
	// TailMassMean is the mean probability outside the top logprobs, and
	// ErrorBound the largest bound (nats) on how far a turn's entropy may
	// be below the true one: the entropy is estimated from the top k only
	// (tail bucket), a lower bound.
	TailMassMean float64               `json:"tail_mass_mean"`
	ErrorBound   float64               `json:"error_bound"`
	ByIntent     map[string]ICEFigures `json:"by_intent,omitempty"`
	Warnings     []string              `json:"warnings,omitempty"`
}

// ICEFigures are ICE over conversations (nats).
type ICEFigures struct {
	Conversations int     `json:"conversations"`
	Mean          float64 `json:"mean"`
	P50           float64 `json:"p50"`
	P90           float64 `json:"p90"`
	Max           float64 `json:"max"`
}
