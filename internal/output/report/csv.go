package report

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spate-dev/spate/result"
)

// seriesHeader is the header of SeriesCSV.
var seriesHeader = []string{
	"scenario", "second", "t_s", "sent", "completed", "errors", "in_flight_max", "output_tokens",
	"ttft_p50_ms", "ttft_p99_ms", "ttft_mean_ms", "e2e_p50_ms", "e2e_p99_ms", "e2e_mean_ms",
}

// SeriesCSV writes the per-second series of every scenario of r as CSV,
// one row a second: second counts from the scenario's start, t_s from the
// first scenario's start. Latency cells are empty in seconds when no
// request completed.
func SeriesCSV(w io.Writer, r *result.Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(seriesHeader); err != nil {
		return fmt.Errorf("writing series CSV: %w", err)
	}
	var t0 float64
	for i := range r.Scenarios {
		sc := &r.Scenarios[i]
		off := t0
		if i > 0 && !sc.StartedAt.IsZero() && !r.Scenarios[0].StartedAt.IsZero() {
			off = sc.StartedAt.Sub(r.Scenarios[0].StartedAt).Seconds()
		}
		s := sc.Series
		for k := range s.SentPerS {
			row := []string{
				text(sc.Name), strconv.Itoa(k), fnum(off + float64(k)),
				at(s.SentPerS, k), at(s.CompletedPerS, k), at(s.ErrorsPerS, k), at(s.InFlight, k), at(s.OutputTokens, k),
				lat(s.TTFTp50ms, k), lat(s.TTFTp99ms, k), lat(s.TTFTMeanMS, k),
				lat(s.E2Ep50ms, k), lat(s.E2Ep99ms, k), lat(s.E2EMeanMS, k),
			}
			if err := cw.Write(row); err != nil {
				return fmt.Errorf("writing series CSV: %w", err)
			}
		}
		t0 = off + math.Max(sc.DurationS, float64(len(s.SentPerS)))
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing series CSV: %w", err)
	}
	return nil
}

func at[T int | int64](v []T, k int) string {
	if k >= len(v) {
		return ""
	}
	return strconv.FormatInt(int64(v[k]), 10)
}

func lat(v []float64, k int) string {
	if k >= len(v) || v[k] == 0 {
		return ""
	}
	return fnum(v[k])
}

// text guards a cell of text (a name, a message) that a spreadsheet would
// take for a formula: one starting with = + - @ or a control character
// gets a leading apostrophe, which spreadsheets show as text.
func text(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// fnum formats a number in the shortest form that reads back exactly.
func fnum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// RecordLine is one line of the per-request JSONL that spate run
// --records writes (see record.Writer): times in ms from the run's start.
type RecordLine struct {
	Seq          uint64    `json:"seq"`
	Scenario     string    `json:"scenario"`
	Warmup       bool      `json:"warmup"`
	IntendedMS   float64   `json:"intended_ms"`
	SentMS       float64   `json:"sent_ms"`
	TTFTms       *float64  `json:"ttft_ms"`
	E2Ems        float64   `json:"e2e_ms"`
	TPOTms       *float64  `json:"tpot_ms"`
	ITLms        []float64 `json:"itl_ms"`
	InputTokens  int       `json:"input_tokens"`
	OutputTokens int       `json:"output_tokens"`
	OutputSource string    `json:"output_source"`
	Status       int       `json:"status"`
	Error        string    `json:"error"`
	ErrorMessage string    `json:"error_message"`
	Intent       string    `json:"intent"`
}

// recordsHeader is the header of RecordsCSV.
var recordsHeader = []string{
	"seq", "scenario", "warmup", "intended_ms", "sent_ms", "lag_ms", "ttft_ms", "tpot_ms", "e2e_ms",
	"itl_count", "itl_mean_ms", "itl_max_ms", "input_tokens", "output_tokens", "output_source",
	"status", "error", "error_message", "intent",
}

// maxRecordLine bounds one JSONL line (a request's ITL list can be long).
const maxRecordLine = 64 << 20

// ParseRecordLine reads one JSONL line of --records.
func ParseRecordLine(b []byte) (RecordLine, error) {
	var l RecordLine
	if err := json.Unmarshal(b, &l); err != nil {
		return l, err
	}
	if l.Scenario == "" {
		return l, fmt.Errorf("no scenario field: not a line of spate run --records")
	}
	return l, nil
}

// RecordsCSV converts the per-request JSONL of spate run --records (read
// from r, name used in errors) into CSV on w, a row a request. ITL lists
// are summarised as count, mean and max.
func RecordsCSV(w io.Writer, r io.Reader, name string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxRecordLine)
	cw := csv.NewWriter(w)
	if err := cw.Write(recordsHeader); err != nil {
		return fmt.Errorf("writing records CSV: %w", err)
	}
	n := 0
	for sc.Scan() {
		n++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		l, err := ParseRecordLine(b)
		if err != nil {
			return fmt.Errorf("reading records %s:%d: %w (want the JSONL of spate run --records)", name, n, err)
		}
		if err := cw.Write(recordRow(l)); err != nil {
			return fmt.Errorf("writing records CSV: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading records %s:%d: %w", name, n+1, err)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing records CSV: %w", err)
	}
	return nil
}

func recordRow(l RecordLine) []string {
	opt := func(p *float64) string {
		if p == nil {
			return ""
		}
		return fnum(*p)
	}
	var itlMean, itlMax string
	if len(l.ITLms) > 0 {
		sum, mx := 0.0, l.ITLms[0]
		for _, v := range l.ITLms {
			sum += v
			mx = math.Max(mx, v)
		}
		itlMean, itlMax = fnum(sum/float64(len(l.ITLms))), fnum(mx)
	}
	status := ""
	if l.Status != 0 {
		status = strconv.Itoa(l.Status)
	}
	return []string{
		strconv.FormatUint(l.Seq, 10), text(l.Scenario), strconv.FormatBool(l.Warmup),
		fnum(l.IntendedMS), fnum(l.SentMS), fnum(math.Round((l.SentMS-l.IntendedMS)*1e6) / 1e6),
		opt(l.TTFTms), opt(l.TPOTms), fnum(l.E2Ems),
		strconv.Itoa(len(l.ITLms)), itlMean, itlMax,
		strconv.Itoa(l.InputTokens), strconv.Itoa(l.OutputTokens), l.OutputSource,
		status, text(l.Error), text(l.ErrorMessage), text(l.Intent),
	}
}
