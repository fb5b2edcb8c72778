package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spate-dev/spate/internal/outfile"
	"github.com/spate-dev/spate/internal/output/htmlreport"
	"github.com/spate-dev/spate/result"
)

// Formats are the report formats, by name (spate report --format).
var Formats = []string{"html", "markdown", "junit", "csv", "records-csv"}

// ErrUsage marks a format that cannot be written for the given output and
// inputs (test with errors.Is).
var ErrUsage = errors.New("report usage")

type usageError struct{ msg string }

func (e usageError) Error() string        { return e.msg }
func (e usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// Format resolves the format of a report from --format (may be ""), the
// output's extension and the inputs (.jsonl records files convert only to
// records-csv); errors are ErrUsage.
func Format(format, out string, inputs []string) (string, error) {
	records := true
	for _, in := range inputs {
		records = records && strings.HasSuffix(in, ".jsonl")
	}
	if format == "" {
		switch strings.ToLower(filepath.Ext(out)) {
		case ".md", ".markdown":
			format = "markdown"
		case ".xml":
			format = "junit"
		case ".csv":
			format = "csv"
		case ".html", ".htm", "":
			format = "html"
		default:
			return "", usagef("-o %s: cannot tell the format from the extension; pass --format (%s)", out, strings.Join(Formats, ", "))
		}
		if records && format == "csv" {
			format = "records-csv"
		}
	}
	switch format {
	case "md":
		format = "markdown"
	case "xml":
		format = "junit"
	}
	if !slices.Contains(Formats, format) {
		return "", usagef("--format %q: use %s", format, strings.Join(Formats, ", "))
	}
	if (format == "records-csv") != records {
		if records {
			return "", usagef("%s: a .jsonl records file converts only to --format records-csv", inputs[0])
		}
		return "", usagef("--format records-csv reads the .jsonl files of spate run --records, not result files")
	}
	if format != "html" && format != "records-csv" && len(inputs) > 1 {
		return "", usagef("--format %s takes one result file (%d given); only html overlays several", format, len(inputs))
	}
	return format, nil
}

// Write renders results in one of the result formats (html overlays
// several, labelled; the others take the first).
func Write(w io.Writer, format string, results []*result.Result, labels []string, title string) error {
	switch format {
	case "html":
		return htmlreport.Render(w, results, htmlreport.Options{Title: title, Labels: labels})
	case "markdown":
		return Markdown(w, results[0])
	case "junit":
		return JUnit(w, results[0])
	case "csv":
		return SeriesCSV(w, results[0])
	}
	return usagef("--format %q: use %s", format, strings.Join(Formats, ", "))
}

// RecordsCSVFiles converts records files (spate run --records) into one
// CSV with one header.
func RecordsCSVFiles(w io.Writer, paths []string) error {
	for i, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("reading records: %w", err)
		}
		var b bytes.Buffer
		err = RecordsCSV(&b, f, path)
		f.Close()
		if err != nil {
			return err
		}
		out := b.Bytes()
		if i > 0 {
			if j := bytes.IndexByte(out, '\n'); j >= 0 {
				out = out[j+1:]
			}
		}
		if _, err := w.Write(out); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile writes b to path through a temporary file, creating the
// directory, so a reader never sees half a report; a path that is not a
// regular file (/dev/null, a FIFO, a link) stays what it is (see
// outfile.Write).
func WriteFile(path string, b []byte) error {
	if err := outfile.Write(path, b); err != nil {
		return fmt.Errorf("writing report %s: %w", path, err)
	}
	return nil
}
