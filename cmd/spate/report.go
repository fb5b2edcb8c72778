package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/internal/output/htmlreport"
	"github.com/spate-dev/spate/internal/output/report"
	"github.com/spate-dev/spate/result"
)

func init() { commands = append(commands, newReportCmd) }

// reportFormats are the formats of spate report, by name.
var reportFormats = []string{"html", "markdown", "junit", "csv", "records-csv"}

func newReportCmd() *cobra.Command {
	var out, format, title string
	c := &cobra.Command{
		Use:   "report RESULT.json [MORE.json...] -o FILE",
		Short: "Turn result files into an HTML report, Markdown, JUnit XML or CSV",
		Long: `Writes a report of one or more result files:

  html         one self-contained page (charts embedded, opens with no network);
               several results are overlaid
  markdown     a summary for a pull-request comment
  junit        JUnit XML, a test case per threshold and a suite per stage
  csv          the per-second series of every stage
  records-csv  the per-request JSONL of spate run --records, as CSV

The format comes from --format, else from the extension of -o (.html, .md,
.xml, .csv; a .jsonl input makes .csv records-csv). -o - writes to stdout.`,
		Example: `  spate report spate-results/quickstart.json -o report.html
  spate report base.json new.json -o compare.html
  spate report result.json --format markdown -o -
  spate report requests.jsonl -o requests.csv`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd, args, out, format, title)
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "", "file to write (- for stdout; default report.html, or stdout for text formats)")
	c.Flags().StringVar(&format, "format", "", "html, markdown, junit, csv or records-csv (default: from -o's extension)")
	c.Flags().StringVar(&title, "title", "", "title of the HTML report")
	return c
}

// reportFormat resolves the format from the flag, the output's extension
// and the inputs.
func reportFormat(format, out string, inputs []string) (string, error) {
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
			return "", usageErr("-o %s: cannot tell the format from the extension; pass --format (%s)", out, strings.Join(reportFormats, ", "))
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
	for _, f := range reportFormats {
		if f == format {
			if (format == "records-csv") != records {
				if records {
					return "", usageErr("%s: a .jsonl records file converts only to --format records-csv", inputs[0])
				}
				return "", usageErr("--format records-csv reads the .jsonl files of spate run --records, not result files")
			}
			if format != "html" && format != "records-csv" && len(inputs) > 1 {
				return "", usageErr("--format %s takes one result file (%d given); only html overlays several", format, len(inputs))
			}
			return format, nil
		}
	}
	return "", usageErr("--format %q: use %s", format, strings.Join(reportFormats, ", "))
}

func runReport(cmd *cobra.Command, args []string, out, format, title string) error {
	if out == "" && format != "" && format != "html" {
		out = "-"
	}
	format, err := reportFormat(format, out, args)
	if err != nil {
		return err
	}
	if out == "" {
		out = "report.html"
	}
	var buf bytes.Buffer
	if format == "records-csv" {
		for i, in := range args {
			if err := reportRecordsCSV(&buf, in, i > 0); err != nil {
				return err
			}
		}
	} else {
		results := make([]*result.Result, len(args))
		labels := make([]string, len(args))
		for i, in := range args {
			if results[i], err = result.Read(in); err != nil {
				return err
			}
			labels[i] = strings.TrimSuffix(filepath.Base(in), ".json")
		}
		if err := writeReport(&buf, format, results, labels, title); err != nil {
			return err
		}
	}
	if out == "-" {
		_, err := cmd.OutOrStdout().Write(buf.Bytes())
		return err
	}
	if err := writeReportFile(out, buf.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s report written to %s\n", format, out)
	return nil
}

// writeReport renders results in one of the result formats.
func writeReport(w io.Writer, format string, results []*result.Result, labels []string, title string) error {
	switch format {
	case "html":
		return htmlreport.Render(w, results, htmlreport.Options{Title: title, Labels: labels})
	case "markdown":
		return report.Markdown(w, results[0])
	case "junit":
		return report.JUnit(w, results[0])
	case "csv":
		return report.SeriesCSV(w, results[0])
	}
	return usageErr("--format %q: use %s", format, strings.Join(reportFormats, ", "))
}

// reportRecordsCSV converts one records file; later files add no header.
func reportRecordsCSV(w io.Writer, path string, skipHeader bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading records: %w", err)
	}
	defer f.Close()
	var b bytes.Buffer
	if err := report.RecordsCSV(&b, f, path); err != nil {
		return err
	}
	out := b.Bytes()
	if skipHeader {
		if i := bytes.IndexByte(out, '\n'); i >= 0 {
			out = out[i+1:]
		}
	}
	_, err = w.Write(out)
	return err
}

// writeReportFile writes b to path through a temporary file, creating the
// directory, so a reader never sees half a report.
func writeReportFile(path string, b []byte) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("writing report %s: %w", path, err)
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("writing report %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing report %s: %w", path, err)
	}
	return nil
}
