package record

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"
	"time"
)

// line is one record as written to --records JSONL. Times are milliseconds
// from the start of the run; latencies are milliseconds.
type line struct {
	Seq          uint64    `json:"seq"`
	Scenario     string    `json:"scenario"`
	Warmup       bool      `json:"warmup,omitempty"`
	IntendedMS   float64   `json:"intended_ms"`
	SentMS       float64   `json:"sent_ms"`
	TTFTms       *float64  `json:"ttft_ms,omitempty"`
	E2Ems        float64   `json:"e2e_ms"`
	TPOTms       *float64  `json:"tpot_ms,omitempty"`
	ITLms        []float64 `json:"itl_ms,omitempty"`
	InputTokens  int       `json:"input_tokens"`
	OutputTokens int       `json:"output_tokens"`
	OutputSource string    `json:"output_source"`
	Status       int       `json:"status,omitempty"`
	Error        string    `json:"error,omitempty"`
	ErrorMessage string    `json:"error_message,omitempty"`
	Intent       string    `json:"intent,omitempty"`
	// Labels are the request's other labels (cluster, turn, ...).
	Labels map[string]string `json:"labels,omitempty"`
	// TraceID and SpanID are the W3C trace context sent, in hex, to join
	// with the server's traces.
	TraceID  string `json:"trace_id,omitempty"`
	SpanID   string `json:"span_id,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
	// AttemptSpans are the span ids of the attempts before the last, in
	// the same trace.
	AttemptSpans []string `json:"attempt_span_ids,omitempty"`
	Upstream     string   `json:"upstream,omitempty"`
	Recall       *float64 `json:"recall,omitempty"`
	// Checks maps each answer check to whether it passed.
	Checks map[string]bool `json:"checks,omitempty"`
	Steps  []stepLine      `json:"steps,omitempty"`
	// Complexity is the request's complexity score (0–100).
	Complexity float64 `json:"complexity,omitempty"`
	NormInput  float64 `json:"normalized_input_tokens,omitempty"`
	// FinishReason is the server's finish_reason; MaxTokens the max_tokens
	// asked.
	FinishReason string `json:"finish_reason,omitempty"`
	MaxTokens    int    `json:"max_tokens,omitempty"`
	// HTTP is the request's HTTP phases, when the client measured them.
	HTTP *phasesLine `json:"http_phases,omitempty"`
	// Entropy is the answer's mean token entropy (nats) over EntropyTokens
	// tokens with top logprobs, when the request asked for them.
	Entropy       *float64 `json:"entropy,omitempty"`
	EntropyTokens int      `json:"entropy_tokens,omitempty"`
}

// phasesLine is a record's HTTP phases (see Phases), each absent when the
// request did not go through it.
type phasesLine struct {
	DNS       *float64 `json:"dns_ms,omitempty"`
	Connect   *float64 `json:"connect_ms,omitempty"`
	TLS       *float64 `json:"tls_ms,omitempty"`
	Write     *float64 `json:"write_ms,omitempty"`
	FirstByte *float64 `json:"first_byte_ms,omitempty"`
}

// phasesOf is r's HTTP phases as a records line has them, nil when none.
func phasesOf(r *Record) *phasesLine {
	if !r.Phases.Any() {
		return nil
	}
	var pl phasesLine
	for p, f := range [NumPhases]**float64{&pl.DNS, &pl.Connect, &pl.TLS, &pl.Write, &pl.FirstByte} {
		if d, ok := r.Phases.Get(Phase(p)); ok {
			v := ms(d)
			*f = &v
		}
	}
	return &pl
}

// stepLine is one step of a multi-step request.
type stepLine struct {
	Name    string   `json:"name"`
	StartMS float64  `json:"start_ms"`
	MS      float64  `json:"ms"`
	TTFTms  *float64 `json:"ttft_ms,omitempty"`
	Tokens  int      `json:"output_tokens,omitempty"`
	Error   string   `json:"error,omitempty"`
	SpanID  string   `json:"span_id,omitempty"`
}

// Writer writes records as JSON lines. It is safe for concurrent use.
type Writer struct {
	mu    sync.Mutex
	w     *bufio.Writer
	start time.Time
	err   error
	buf   []float64
}

// NewWriter returns a Writer to w; times are written relative to start.
func NewWriter(w io.Writer, start time.Time) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 64<<10), start: start}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Write appends r, labelled with its scenario.
func (w *Writer) Write(scenario string, r *Record) {
	l := line{
		Seq: r.Seq, Scenario: scenario, Warmup: r.Warmup,
		IntendedMS: ms(r.Intended.Sub(w.start)), SentMS: ms(r.Sent.Sub(w.start)), E2Ems: ms(r.E2E()),
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, OutputSource: r.OutputSource.String(),
		Status: r.Status, Error: string(r.Err), ErrorMessage: r.ErrMsg, Intent: r.Intent,
	}
	if t, ok := r.TTFT(); ok {
		v := ms(t)
		l.TTFTms = &v
	}
	if t, ok := r.TPOT(); ok {
		v := ms(t)
		l.TPOTms = &v
	}
	if r.TraceID != ([16]byte{}) {
		l.TraceID, l.SpanID = hex.EncodeToString(r.TraceID[:]), hex.EncodeToString(r.SpanID[:])
	}
	if r.Attempts > 1 {
		l.Attempts = r.Attempts
	}
	for _, sp := range r.PriorSpans {
		l.AttemptSpans = append(l.AttemptSpans, hex.EncodeToString(sp[:]))
	}
	l.Upstream = r.Upstream
	l.Complexity, l.NormInput = math.Round(r.Complexity*10)/10, r.NormInput
	if r.Recall >= 0 {
		v := r.Recall
		l.Recall = &v
	}
	l.FinishReason, l.MaxTokens = r.FinishReason, r.RequestedOutput
	l.HTTP = phasesOf(r)
	if r.EntropyTokens > 0 {
		v := r.Entropy
		l.Entropy, l.EntropyTokens = &v, r.EntropyTokens
	}
	if len(r.Labels) > 0 {
		l.Labels = make(map[string]string, len(r.Labels))
		for _, lb := range r.Labels {
			l.Labels[lb.Key] = lb.Value
		}
	}
	if len(r.Checks) > 0 {
		l.Checks = make(map[string]bool, len(r.Checks))
		for _, c := range r.Checks {
			l.Checks[c.Name] = c.Pass
		}
	}
	for _, st := range r.Steps {
		sl := stepLine{Name: st.Name, StartMS: ms(st.Start.Sub(w.start)), MS: ms(st.End.Sub(st.Start)), Error: string(st.Err), Tokens: st.Tokens}
		if !st.FirstToken.IsZero() {
			v := ms(st.FirstToken.Sub(st.Start))
			sl.TTFTms = &v
		}
		if st.SpanID != ([8]byte{}) {
			sl.SpanID = hex.EncodeToString(st.SpanID[:])
		}
		l.Steps = append(l.Steps, sl)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = w.buf[:0]
	for _, g := range r.Gaps {
		w.buf = append(w.buf, ms(g))
	}
	l.ITLms = w.buf
	b, err := json.Marshal(l)
	if err == nil {
		b = append(b, '\n')
		_, err = w.w.Write(b)
	}
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("writing records: %w", err)
	}
}

// Flush writes buffered records and returns the first error seen.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.w.Flush(); err != nil && w.err == nil {
		w.err = fmt.Errorf("writing records: %w", err)
	}
	return w.err
}
