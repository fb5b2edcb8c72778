package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spate-dev/spate/experiment"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spate-dev/spate/internal/metrics/check"

	"github.com/spate-dev/spate/internal/workload/payload"
)

// datasetLine is one line of a JSONL dataset. Exactly one of prompt,
// messages or body must be set.
type datasetLine struct {
	Prompt       *string            `json:"prompt"`
	Messages     []Message          `json:"messages"`
	MaxTokens    *int               `json:"max_tokens"`
	OutputTokens *int               `json:"output_tokens"`
	Intent       string             `json:"intent"`
	Method       string             `json:"method"`
	Path         string             `json:"path"`
	Body         json.RawMessage    `json:"body"`
	Vars         map[string]any     `json:"vars"`
	Labels       map[string]string  `json:"labels"`
	Checks       []experiment.Check `json:"checks"`
	Tools        json.RawMessage    `json:"tools"`
	// Timestamp is the request's send time in a trace, in milliseconds
	// from the trace's start (see TraceSource).
	Timestamp *float64 `json:"timestamp"`
}

// Dataset is a Source that cycles through requests read from a JSONL file.
// Each line is an object with "prompt" (a string), "messages" (chat
// messages) or "body" (a plain HTTP body, with optional "method" and
// "path"); optional "max_tokens" (alias "output_tokens") and "intent".
type Dataset struct {
	reqs   []Request
	sha256 string
	format string // one of the Formats, "" when read by ReadDataset
}

var _ Source = (*Dataset)(nil)

// LoadDataset reads a JSONL dataset file.
func LoadDataset(path string) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading dataset: %w", err)
	}
	defer f.Close()
	return readDataset(bounded(nil, f, path, Limits{}), path, Limits{})
}

// ReadDataset parses a JSONL dataset from r; name is used in errors.
// Blank lines are skipped. An error names the file and line.
func ReadDataset(r io.Reader, name string) (*Dataset, error) {
	return readDataset(r, name, Limits{})
}

// readDataset is ReadDataset with lim's line size limit.
func readDataset(r io.Reader, name string, lim Limits) (*Dataset, error) {
	var all bytes.Buffer
	sc := bufio.NewScanner(io.TeeReader(r, &all))
	maxLine := int(min(lim.WithDefaults().LineSize, 1<<40))
	sc.Buffer(make([]byte, min(64<<10, maxLine)), maxLine)
	d := &Dataset{}
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		req, err := parseLine(text)
		if err == nil {
			err = parseTemplates(&req, fmt.Sprintf("dataset %s, line %d", name, line))
		}
		if err != nil {
			return nil, fmt.Errorf("dataset %s, line %d: %w", name, line, err)
		}
		d.reqs = append(d.reqs, req)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, lineTooLong("dataset "+name, line+1, lim)
		}
		return nil, fmt.Errorf("dataset %s, after line %d: %w", name, line, err)
	}
	if len(d.reqs) == 0 {
		return nil, fmt.Errorf("dataset %s: no requests (want one JSON object a line, e.g. {\"prompt\": \"...\"})", name)
	}
	d.sha256 = digest([]byte("dataset/v1"), all.Bytes())
	return d, nil
}

func parseLine(text []byte) (Request, error) {
	var l datasetLine
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return Request{}, fmt.Errorf("not a JSON object of prompt/messages/body: %w", err)
	}
	set := 0
	if l.Prompt != nil {
		set++
	}
	if l.Messages != nil {
		set++
	}
	if l.Body != nil {
		set++
	}
	if set != 1 {
		return Request{}, fmt.Errorf(`want exactly one of "prompt", "messages" or "body"`)
	}
	req := Request{Messages: l.Messages, Intent: l.Intent, Method: strings.ToUpper(l.Method), Path: l.Path, Vars: l.Vars, Tools: l.Tools}
	keys := make([]string, 0, len(l.Labels))
	for k := range l.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "" || k == "intent" {
			return Request{}, fmt.Errorf(`labels: key %q is not allowed (use "intent" for the intent)`, k)
		}
		req.Labels = append(req.Labels, Label{Key: k, Value: l.Labels[k]})
	}
	if len(l.Checks) > 0 {
		set, err := check.Compile(l.Checks)
		if err != nil {
			return Request{}, fmt.Errorf("checks: %w", err)
		}
		req.Checks, req.KeepAnswer = set, true
	}
	if l.Timestamp != nil {
		if *l.Timestamp < 0 || math.IsNaN(*l.Timestamp) || math.IsInf(*l.Timestamp, 0) {
			return Request{}, fmt.Errorf("timestamp must be a number of milliseconds >= 0")
		}
		req.Offset = time.Duration(*l.Timestamp * float64(time.Millisecond))
		req.timed = true
	}
	if l.Prompt != nil {
		req.Prompt = *l.Prompt
	}
	for i, m := range l.Messages {
		if m.Role == "" {
			return Request{}, fmt.Errorf("messages[%d] has no role", i)
		}
	}
	if l.Body != nil {
		// A JSON string body is sent as its text; anything else as JSON.
		var s string
		if json.Unmarshal(l.Body, &s) == nil {
			req.Body = []byte(s)
		} else {
			req.Body = append([]byte(nil), l.Body...)
		}
	}
	switch {
	case l.MaxTokens != nil:
		req.MaxTokens = *l.MaxTokens
	case l.OutputTokens != nil:
		req.MaxTokens = *l.OutputTokens
	}
	if req.MaxTokens < 0 {
		return Request{}, fmt.Errorf("max_tokens must be >= 0")
	}
	return req, nil
}

// Len is the number of requests in the dataset.
func (d *Dataset) Len() int { return len(d.reqs) }

// Request implements Source: request n is line n modulo the dataset size.
func (d *Dataset) Request(n uint64) (*Request, error) {
	r := d.reqs[n%uint64(len(d.reqs))]
	return &r, nil
}

// Digest implements Source.
func (d *Dataset) Digest() string { return d.sha256 }

// WithOutput returns a Source that sets MaxTokens from out on every request
// of s that does not set it itself.
func WithOutput(s Source, out Lengths, seed uint64) Source {
	return SourceFunc{
		Sha256: digest([]byte(s.Digest()), []byte(fmt.Sprintf("out=%s seed=%d", out.key(), seed))),
		F: func(n uint64) (*Request, error) {
			r, err := s.Request(n)
			if err != nil || r.MaxTokens > 0 || out.Mean <= 0 {
				return r, err
			}
			r.MaxTokens = out.Sample(newRand(seed^0x5eed, n))
			return r, nil
		},
	}
}

// parseTemplates parses the body and prompt of r as templates when they
// contain template actions.
func parseTemplates(r *Request, where string) error {
	var err error
	if payload.Has(string(r.Body)) {
		if r.BodyTemplate, err = payload.Parse(where+" body", string(r.Body)); err != nil {
			return err
		}
	}
	if payload.Has(r.Prompt) {
		if r.PromptTemplate, err = payload.Parse(where+" prompt", r.Prompt); err != nil {
			return err
		}
	}
	return nil
}
