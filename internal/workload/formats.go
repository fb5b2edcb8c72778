package workload

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spate-dev/spate/internal/capread"
	"github.com/spate-dev/spate/internal/scrub"
)

// Dataset formats LoadFormat reads.
const (
	FormatJSONL    = "jsonl"    // spate's own: prompt | messages | body a line
	FormatShareGPT = "sharegpt" // [{"conversations": [{"from": "human", "value": ...}, ...]}]
	FormatBatch    = "batch"    // OpenAI batch input: {"custom_id", "method", "url", "body"} a line
	FormatCSV      = "csv"      // a header row, then a prompt column
)

// Formats lists the dataset formats, for help and errors.
const Formats = "jsonl, sharegpt, batch, csv, mooncake"

// Counter counts tokens (tokenizer.Counter satisfies it).
type Counter interface {
	Count(text string) int
}

// LoadOptions tune LoadFormat.
type LoadOptions struct {
	// Format is one of Formats; "" guesses from the file (see Detect).
	Format string
	// Tokenizer counts the tokens of ShareGPT replies, which give each
	// request's max_tokens (nil: replies give no max_tokens).
	Tokenizer Counter
	// Turns reads ShareGPT conversations as multi-turn requests (every
	// human message a turn) instead of their first exchange.
	Turns bool
	// Column is the CSV column holding the prompt (default "prompt").
	Column string
	// Limits bound the file and its lines (zero: the defaults).
	Limits Limits
	// Context stops the read when it is done (nil: never).
	Context context.Context
	// BlockSize is the tokens per hash id of a Mooncake trace (0:
	// DefaultTraceBlockSize), and Seed fixes the text of its blocks.
	BlockSize int
	Seed      uint64
}

// LoadFormat reads a dataset file in any of Formats.
func LoadFormat(path string, o LoadOptions) (*Dataset, error) {
	// A CSV record may hold line ends in its quoted fields; a ShareGPT
	// file may be one JSON array, not lines.
	lines := capread.LineOptions{
		CSV:         o.Format == FormatCSV || o.Format == "" && strings.EqualFold(filepath.Ext(path), ".csv"),
		UnlessArray: o.Format == "" || o.Format == FormatShareGPT,
	}
	b, err := readLines(o.Context, path, lines, o.Limits)
	if le := (*capread.LineError)(nil); errors.As(err, &le) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("reading dataset: %w", err)
	}
	format := o.Format
	if format == "" {
		format = Detect(path, b)
	}
	var d *Dataset
	switch format {
	case FormatJSONL:
		return readDataset(bytes.NewReader(b), path, o.Limits)
	case FormatShareGPT:
		d, err = readShareGPT(b, path, o)
	case FormatBatch:
		d, err = readBatch(b, path, o.Limits)
	case FormatCSV:
		d, err = readCSV(b, path, o.Column, o.Limits)
	case FormatMooncake:
		d, err = readMooncake(b, path, o)
	default:
		return nil, fmt.Errorf("dataset %s: format %q: use one of %s", path, format, Formats)
	}
	if err != nil {
		return nil, err
	}
	if len(d.reqs) == 0 {
		return nil, fmt.Errorf("dataset %s: no requests in the file (format %s)", path, format)
	}
	key := fmt.Sprint(o.Turns, o.Column)
	if format == FormatMooncake {
		key = fmt.Sprintf("block=%d seed=%d", max(o.BlockSize, 0), o.Seed)
		if o.BlockSize <= 0 {
			key = fmt.Sprintf("block=%d seed=%d", DefaultTraceBlockSize, o.Seed)
		}
	}
	d.sha256 = digest([]byte("dataset/"+format+"/v1"), b, []byte(key))
	d.format = format
	return d, nil
}

// Detect guesses a dataset's format: csv by extension; a JSON array, or
// lines with "conversations", is ShareGPT; lines with "custom_id" and
// "body" are OpenAI batch input; lines with "input_length" or "hash_ids"
// are a Mooncake trace; else spate's JSONL.
func Detect(path string, b []byte) string {
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		return FormatCSV
	}
	t := bytes.TrimSpace(b)
	if bytes.HasPrefix(t, []byte("[")) {
		return FormatShareGPT
	}
	first, _, _ := bytes.Cut(t, []byte("\n"))
	var probe map[string]json.RawMessage
	if json.Unmarshal(first, &probe) == nil {
		if _, ok := probe["conversations"]; ok {
			return FormatShareGPT
		}
		_, id := probe["custom_id"]
		_, body := probe["body"]
		if id && body {
			return FormatBatch
		}
		_, length := probe["input_length"]
		_, hashes := probe["hash_ids"]
		if length || hashes {
			return FormatMooncake
		}
	}
	return FormatJSONL
}

type shareGPTConv struct {
	ID            any `json:"id"`
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// readShareGPT reads a JSON array (or JSON lines) of ShareGPT
// conversations. Conversations that do not start with a human message are
// skipped, as vLLM's benchmark does.
func readShareGPT(b []byte, path string, o LoadOptions) (*Dataset, error) {
	var convs []shareGPTConv
	t := bytes.TrimSpace(b)
	if bytes.HasPrefix(t, []byte("[")) {
		if err := json.Unmarshal(t, &convs); err != nil {
			return nil, fmt.Errorf("dataset %s: not a ShareGPT JSON array: %w", path, err)
		}
	} else {
		for i, line := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if int64(len(line)) > o.Limits.WithDefaults().LineSize {
				return nil, lineTooLong("dataset "+path, i+1, o.Limits)
			}
			var c shareGPTConv
			if err := json.Unmarshal(line, &c); err != nil {
				return nil, fmt.Errorf("dataset %s, line %d: not a ShareGPT conversation: %w", path, i+1, err)
			}
			convs = append(convs, c)
		}
	}
	d := &Dataset{}
	// count counts a reply's tokens; it stops when o.Context ends (the
	// replies of a 1 GiB file take minutes to count).
	var stop error
	count := func(s string) int {
		if o.Tokenizer == nil || stop != nil {
			return 0
		}
		if o.Context == nil {
			return o.Tokenizer.Count(s)
		}
		if cc, ok := o.Tokenizer.(interface {
			CountContext(context.Context, string) (int, error)
		}); ok {
			n, err := cc.CountContext(o.Context, s)
			stop = err
			return n
		}
		if stop = o.Context.Err(); stop != nil {
			return 0
		}
		return o.Tokenizer.Count(s)
	}
	for _, c := range convs {
		if stop != nil {
			return nil, fmt.Errorf("dataset %s: counting the replies' tokens: %w", path, stop)
		}
		msgs := c.Conversations
		if len(msgs) < 1 || !isHuman(msgs[0].From) {
			continue
		}
		if !o.Turns {
			req := Request{Prompt: msgs[0].Value}
			if len(msgs) > 1 && !isHuman(msgs[1].From) {
				req.MaxTokens = count(msgs[1].Value)
			}
			d.reqs = append(d.reqs, req)
			continue
		}
		var req Request
		for i := 0; i < len(msgs); i++ {
			if !isHuman(msgs[i].From) {
				continue
			}
			turn := Turn{Prompt: msgs[i].Value}
			if i+1 < len(msgs) && !isHuman(msgs[i+1].From) {
				turn.MaxTokens = count(msgs[i+1].Value)
			}
			req.Turns = append(req.Turns, turn)
		}
		d.reqs = append(d.reqs, req)
	}
	if stop != nil {
		return nil, fmt.Errorf("dataset %s: counting the replies' tokens: %w", path, stop)
	}
	return d, nil
}

func isHuman(from string) bool { return from == "human" || from == "user" }

// readBatch reads OpenAI batch input lines: the body's messages (or
// prompt) and max_tokens make the request; custom_id is not kept.
func readBatch(b []byte, path string, lim Limits) (*Dataset, error) {
	d := &Dataset{}
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if int64(len(line)) > lim.WithDefaults().LineSize {
			return nil, lineTooLong("dataset "+path, i+1, lim)
		}
		var l struct {
			CustomID string `json:"custom_id"`
			URL      string `json:"url"`
			Body     struct {
				Messages            []Message       `json:"messages"`
				Prompt              *string         `json:"prompt"`
				Input               *string         `json:"input"`
				MaxTokens           *int            `json:"max_tokens"`
				MaxCompletionTokens *int            `json:"max_completion_tokens"`
				Tools               json.RawMessage `json:"tools"`
			} `json:"body"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, fmt.Errorf("dataset %s, line %d: not an OpenAI batch request: %w", path, i+1, err)
		}
		req := Request{Messages: l.Body.Messages, Tools: l.Body.Tools}
		switch {
		case l.Body.Prompt != nil:
			req.Prompt = *l.Body.Prompt
		case l.Body.Input != nil:
			req.Prompt = *l.Body.Input
		case len(req.Messages) == 0:
			return nil, fmt.Errorf("dataset %s, line %d: the body has no messages, prompt or input", path, i+1)
		}
		if l.Body.MaxCompletionTokens != nil {
			req.MaxTokens = *l.Body.MaxCompletionTokens
		} else if l.Body.MaxTokens != nil {
			req.MaxTokens = *l.Body.MaxTokens
		}
		if req.MaxTokens < 0 {
			return nil, fmt.Errorf("dataset %s, line %d: max_tokens %d is not a count >= 0", path, i+1, req.MaxTokens)
		}
		d.reqs = append(d.reqs, req)
	}
	return d, nil
}

// headerShown is how much of a CSV header an error quotes: a header line
// may be as long as the lineSize limit.
const headerShown = 200

// readCSV reads a CSV file with a header row: the prompt column (column,
// default "prompt"), and optional max_tokens (or output_tokens), intent
// and timestamp (milliseconds) columns.
func readCSV(b []byte, path, column string, lim Limits) (*Dataset, error) {
	if column == "" {
		column = "prompt"
	}
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("dataset %s: reading the CSV header: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
	}
	pi, ok := col[strings.ToLower(column)]
	if !ok {
		return nil, fmt.Errorf("dataset %s, line 1: no %q column in the header \"%s\" (name the prompt column with datasetColumn: under workload: in an experiment file)", path, column, scrub.Text(strings.Join(head, ","), headerShown))
	}
	get := func(rec []string, name string) (string, bool) {
		i, ok := col[name]
		if !ok || i >= len(rec) {
			return "", false
		}
		return strings.TrimSpace(rec[i]), rec[i] != ""
	}
	d := &Dataset{}
	for {
		start := r.InputOffset()
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// A parse error names its line (csv.ParseError); FieldPos is
			// only valid after a record was read.
			return nil, fmt.Errorf("dataset %s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if r.InputOffset()-start > lim.WithDefaults().LineSize {
			return nil, lineTooLong("dataset "+path, line, lim)
		}
		if pi >= len(rec) || rec[pi] == "" {
			return nil, fmt.Errorf("dataset %s, line %d: empty %q column", path, line, column)
		}
		req := Request{Prompt: rec[pi]}
		for _, name := range []string{"max_tokens", "output_tokens"} {
			if v, ok := get(rec, name); ok {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("dataset %s, line %d: %s %q is not a count >= 0", path, line, name, v)
				}
				req.MaxTokens = n
				break
			}
		}
		req.Intent, _ = get(rec, "intent")
		if v, ok := get(rec, "timestamp"); ok {
			ms, err := strconv.ParseFloat(v, 64)
			if err != nil || ms < 0 {
				return nil, fmt.Errorf("dataset %s, line %d: timestamp %q is not milliseconds >= 0", path, line, v)
			}
			req.Offset, req.timed = time.Duration(ms*float64(time.Millisecond)), true
		}
		d.reqs = append(d.reqs, req)
	}
	return d, nil
}

// Offsets returns the send time of every request of a timed trace (every
// line has a timestamp), from the trace's first request, in order. ok is
// false when no line has one; an error says a trace is partly timed or out
// of order.
func (d *Dataset) Offsets() (offs []time.Duration, ok bool, err error) {
	timed := 0
	for _, r := range d.reqs {
		if r.timed {
			timed++
		}
	}
	if timed == 0 {
		return nil, false, nil
	}
	if timed != len(d.reqs) {
		return nil, false, fmt.Errorf("a trace needs a timestamp on every line: %d of %d lines have one", timed, len(d.reqs))
	}
	base := d.reqs[0].Offset
	for i, r := range d.reqs {
		if i > 0 && r.Offset < d.reqs[i-1].Offset {
			return nil, false, fmt.Errorf("trace request %d (timestamp %v) is before the one above it: sort the trace by timestamp", i+1, r.Offset)
		}
		offs = append(offs, r.Offset-base)
	}
	return offs, true, nil
}
