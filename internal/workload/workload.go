// Package workload produces the requests a run sends: what to ask, not when
// to ask it. Every Source is deterministic in the request index and its
// seed, so the same run sends the same requests.
//
// Stage: workload.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spate-dev/spate/internal/metrics/check"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload/payload"
)

// Label is one key=value label of a request.
type Label = record.Label

// Request is one request to send. Protocol clients read the fields that
// apply to their API and ignore the rest.
type Request struct {
	// Prompt is the completion prompt, the embedding input, or (when
	// Messages is empty) the single user message of a chat request.
	Prompt string
	// Messages, when set, is the chat conversation to send.
	Messages []Message
	// MaxTokens is the number of output tokens to ask for (0: server's default).
	MaxTokens int
	// StopFree lets the model end its answer when it is done even when the
	// run asks for exact output lengths (--ignore-eos): a probe's answer,
	// judged on what it says, must not be forced past its end.
	StopFree bool
	// InputTokens is the prompt's length in tokens when the source knows it
	// (synthetic prompts), else 0.
	InputTokens int
	// KeepAnswer asks the protocol client to keep the response text in
	// the record (record.Record.Answer), for answer checks and probes.
	KeepAnswer bool
	// Intent labels the request for per-label breakdowns ("" when none).
	Intent string
	// Labels are further labels (cluster, turn, ...) for breakdowns.
	Labels []Label
	// Tools are the chat request's tool definitions, as JSON.
	Tools json.RawMessage
	// Session identifies a conversation: sent as the request's "user" so
	// servers that route by it keep a conversation on one replica.
	Session string
	// Checks are tests of the answer, evaluated by the engine when the
	// request succeeds; a request with checks must set KeepAnswer. One that
	// passes them all counts towards sTPS.
	Checks *check.Set
	// Complexity is the request's complexity score, 0–100 (see Complexity).
	Complexity float64
	// NormTokens is the request's input in normalised tokens: text tokens
	// plus weighted image and audio units (see Weights).
	NormTokens float64
	// Temperature and TopP, when set, are the request's sampling
	// parameters; Model, when set, is the model it asks for instead of the
	// target's (a LoRA adapter).
	Temperature, TopP *float64
	Model             string
	// Logprobs, when above 0, asks for that many top logprobs a token (for
	// ICE; see the openai client).
	Logprobs int
	// Original is the prompt as it was sampled, before a mutate step
	// rewrote it ("" when none did).
	Original string
	// constraints are the request's intent's, injected when the workload
	// is finished (Build).
	constraints *Constraints
	// PacedTokens is what token-rate pacing counted for the request (see
	// ExpectedTokens), 0 when the stage is not paced in tokens.
	PacedTokens float64
	// Offset, when the source is a timed trace, is the request's intended
	// send time from the start of the trace (see Dataset.Offsets).
	Offset time.Duration
	timed  bool
	// Turns, when set, make the request a conversation: the engine sends
	// Messages (e.g. a system prompt) plus each turn's user message in
	// turn, the history growing with the real answers (see Turn).
	Turns []Turn
	// Documents are a rerank or score request's documents, ranked against
	// Prompt (the query); DocumentTokens is their length in tokens when
	// the source knows it.
	Documents      []string
	DocumentTokens int
	// TopN, when above 0, asks a reranker for that many results.
	TopN int
	// Method, Path and Body describe a plain HTTP request (--api http).
	Method string
	Path   string
	Body   []byte
	// Vars are the dataset line's "vars", for templates.
	Vars map[string]any
	// BodyTemplate and PromptTemplate, when set, make Body and Prompt
	// templates filled per request (see WithTemplates).
	BodyTemplate, PromptTemplate *payload.Template
}

// Turn is one user turn of a conversation.
type Turn struct {
	Prompt    string
	MaxTokens int
	// Think is how long the user thinks before sending this turn, after
	// the previous answer (0 for the first turn).
	Think time.Duration
	// InputTokens is the turn's own prompt length in tokens, when known.
	InputTokens int
}

// Source yields the request with index n. Implementations must be safe for
// concurrent use and return the same request for the same n.
type Source interface {
	Request(n uint64) (*Request, error)
	// Digest identifies the workload: the hex SHA-256 of what defines it
	// (its parameters and seed, or the dataset's bytes).
	Digest() string
}

// SourceFunc adapts a function to a Source with a fixed digest.
type SourceFunc struct {
	F      func(n uint64) (*Request, error)
	Sha256 string
}

// Request implements Source.
func (s SourceFunc) Request(n uint64) (*Request, error) { return s.F(n) }

// Digest implements Source.
func (s SourceFunc) Digest() string { return s.Sha256 }

var _ Source = SourceFunc{}

// Offset returns a Source whose request n is s's request base+n, with s's
// digest: a later stage of a run goes on where the stages before it
// stopped, so it asks new prompts (a synthetic request is drawn from its
// index) and reads a dataset on instead of from its start.
func Offset(s Source, base uint64) Source {
	if base == 0 {
		return s
	}
	return SourceFunc{Sha256: s.Digest(), F: func(n uint64) (*Request, error) { return s.Request(base + n) }}
}

func digest(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Fixed is a Source that sends the same request every time.
type Fixed struct {
	Req Request
}

// Request implements Source. The request is shared: clients must not
// modify it.
func (f *Fixed) Request(uint64) (*Request, error) { return &f.Req, nil }

// Digest implements Source.
func (f *Fixed) Digest() string {
	return digest([]byte("fixed/v1"), []byte(f.Req.Method), []byte(f.Req.Path), f.Req.Body, []byte(f.Req.Prompt))
}

// WithTemplates returns a Source that fills the body and prompt templates of
// the requests of s, per request, from the request's index, its vars and a
// random source fixed by seed.
func WithTemplates(s Source, seed uint64) Source {
	return SourceFunc{
		Sha256: digest([]byte(s.Digest()), []byte(fmt.Sprintf("templates seed=%d", seed))),
		F: func(n uint64) (*Request, error) {
			r, err := s.Request(n)
			if err != nil || (r.BodyTemplate == nil && r.PromptTemplate == nil) {
				return r, err
			}
			filled := *r
			d := payload.NewData(n, r.Vars, seed)
			if r.BodyTemplate != nil {
				b, err := r.BodyTemplate.Execute(d)
				if err != nil {
					return nil, err
				}
				filled.Body = []byte(b)
			}
			if r.PromptTemplate != nil {
				p, err := r.PromptTemplate.Execute(d)
				if err != nil {
					return nil, err
				}
				filled.Prompt = p
			}
			filled.BodyTemplate, filled.PromptTemplate = nil, nil
			return &filled, nil
		},
	}
}
