// Package querylog reads logs of real user queries (plain text, JSONL or
// CSV) into a list of query texts, for building workloads from them.
//
// Stage: workload (built from a log).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package querylog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spate-dev/spate/internal/capread"
)

// Formats a log can be read in.
const (
	Auto  = "auto"  // from the flags and the file's extension
	Text  = "text"  // one query per line
	JSONL = "jsonl" // one JSON object per line, the query in a field
	CSV   = "csv"   // a header row, the query in a named column
)

// Options says how to read a log.
type Options struct {
	// Format is Auto, Text, JSONL or CSV. Auto picks JSONL when Field is
	// set or the name ends in .jsonl/.json/.ndjson, CSV when Column is set
	// or the name ends in .csv, else Text.
	Format string
	// Field is the JSONL field holding the query (default "prompt"). A
	// field holding chat messages (an array of {role, content}) yields the
	// content of its last user message.
	Field string
	// Column is the CSV column (by header name) holding the query
	// (default "prompt").
	Column string
	// MaxSize bounds the log's size (0: DefaultMaxSize).
	MaxSize int64
	// Context stops the read when it is done (nil: never).
	Context context.Context
}

// DefaultMaxSize bounds a log when Options.MaxSize is 0.
const DefaultMaxSize = 1 << 30

// Query is one query of a log.
type Query struct {
	Text string // the query, trimmed
	Line int    // 1-based line of the file the query starts on
}

// maxLine bounds one line of a text or JSONL log.
const maxLine = 16 << 20

// ReadFile reads the log at path.
func ReadFile(path string, o Options) ([]Query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading query log: %w", err)
	}
	defer f.Close()
	return Read(f, path, o)
}

// format resolves o.Format for a log named name.
func (o Options) format(name string) (string, error) {
	switch o.Format {
	case Text, JSONL, CSV:
		return o.Format, nil
	case "", Auto:
	default:
		return "", fmt.Errorf("log format %q: use auto, text, jsonl or csv", o.Format)
	}
	switch {
	case o.Field != "":
		return JSONL, nil
	case o.Column != "":
		return CSV, nil
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jsonl", ".json", ".ndjson":
		return JSONL, nil
	case ".csv":
		return CSV, nil
	}
	return Text, nil
}

// Read reads a log from r; name (a file name) is used for the format and in
// errors, which name the file and line. Blank queries are skipped.
func Read(r io.Reader, name string, o Options) ([]Query, error) {
	format, err := o.format(name)
	if err != nil {
		return nil, err
	}
	limit := o.MaxSize
	if limit <= 0 {
		limit = DefaultMaxSize
	}
	r = capread.Reader(o.Context, r, limit, "query log "+name, "")
	var qs []Query
	switch format {
	case Text:
		qs, err = readText(r, name)
	case JSONL:
		field := o.Field
		if field == "" {
			field = "prompt"
		}
		qs, err = readJSONL(r, name, field)
	case CSV:
		col := o.Column
		if col == "" {
			col = "prompt"
		}
		qs, err = readCSV(r, name, col)
	}
	if err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("query log %s (%s): no queries found", name, format)
	}
	return qs, nil
}

func readText(r io.Reader, name string) ([]Query, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var qs []Query
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(string(bytes.TrimPrefix(sc.Bytes(), []byte("\xef\xbb\xbf"))))
		if t != "" {
			qs = append(qs, Query{Text: t, Line: line})
		}
	}
	if err := scanErr(sc.Err(), name, line); err != nil {
		return nil, err
	}
	return qs, nil
}

func readJSONL(r io.Reader, name, field string) ([]Query, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var qs []Query
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(bytes.TrimPrefix(sc.Bytes(), []byte("\xef\xbb\xbf")))
		if len(b) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			return nil, fmt.Errorf("query log %s, line %d: not a JSON object: %w", name, line, err)
		}
		raw, ok := obj[field]
		if !ok {
			return nil, fmt.Errorf("query log %s, line %d: no field %q (set --field to the field holding the query)", name, line, field)
		}
		t, err := fieldText(raw)
		if err != nil {
			return nil, fmt.Errorf("query log %s, line %d: field %q: %w", name, line, field, err)
		}
		if t = strings.TrimSpace(t); t != "" {
			qs = append(qs, Query{Text: t, Line: line})
		}
	}
	if err := scanErr(sc.Err(), name, line); err != nil {
		return nil, err
	}
	return qs, nil
}

// message is one chat message; content is a string or an array of parts.
type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// fieldText returns the query held by a JSON value: a string, or the
// content of the last user message of an array of chat messages.
func fieldText(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var msgs []message
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return "", errors.New("want a string or an array of chat messages")
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		return contentText(msgs[i].Content)
	}
	return "", errors.New("no message with role \"user\"")
}

// contentText returns the text of a message content: a string, or the
// text parts of an array of content parts joined by spaces.
func contentText(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("user message content is neither a string nor an array of parts")
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" || (p.Type == "" && p.Text != "") {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, " "), nil
}

func readCSV(r io.Reader, name, column string) ([]Query, error) {
	// The record limit is checked as the bytes come in: encoding/csv
	// holds a whole record, and a quote never closed made the rest of the
	// file (up to 1 GiB) one.
	r = capread.Lines(r, maxLine, capread.LineOptions{Name: "query log " + name, CSV: true})
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("query log %s: empty CSV file (want a header row naming column %q)", name, column)
	}
	if le := (*capread.LineError)(nil); errors.As(err, &le) {
		return nil, fmt.Errorf("query log %s, line 1: the header is over the line limit of %d MiB", name, maxLine>>20)
	}
	if err != nil {
		return nil, fmt.Errorf("query log %s: %w", name, err)
	}
	col := -1
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if h == column {
			col = i
			break
		}
	}
	if col < 0 {
		return nil, fmt.Errorf("query log %s, line 1: no column %q in the header %q (set --column)", name, column, strings.Join(header, ","))
	}
	var qs []Query
	for {
		start := cr.InputOffset()
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if le := (*capread.LineError)(nil); errors.As(err, &le) {
			return nil, fmt.Errorf("query log %s, line %d: the record is over the line limit of %d MiB", name, le.Line, maxLine>>20)
		}
		if err != nil {
			return nil, fmt.Errorf("query log %s: %w", name, err)
		}
		if cr.InputOffset()-start > maxLine {
			line, _ := cr.FieldPos(0)
			return nil, fmt.Errorf("query log %s, line %d: the record is over the line limit of %d MiB", name, line, maxLine>>20)
		}
		line, _ := cr.FieldPos(0)
		if col >= len(rec) {
			return nil, fmt.Errorf("query log %s, line %d: %d fields, column %q is field %d", name, line, len(rec), column, col+1)
		}
		if t := strings.TrimSpace(rec[col]); t != "" {
			line, _ = cr.FieldPos(col)
			qs = append(qs, Query{Text: t, Line: line})
		}
	}
	return qs, nil
}

// scanErr is a scanner's error as the log's: a line over the limit says
// so with its number.
func scanErr(err error, name string, line int) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("query log %s, line %d: the line is over the line limit of %d MiB", name, line+1, maxLine>>20)
	}
	return fmt.Errorf("query log %s, line %d: %w", name, line+1, err)
}
