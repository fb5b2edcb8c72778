package main

import (
	"context"
	"encoding/csv"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/llmtest"
)

// reportExperiment is a run of two short open-loop stages, for reports
// with stage boundaries and a sweep.
const reportExperiment = `apiVersion: spate/v1
kind: Experiment
metadata: {name: report-test}
target: {url: TARGET, api: chat, model: m}
workload: {inputTokens: "32", outputTokens: "8", seed: 1}
slo: {ttft: 1s}
stages:
  - {name: low, rate: 10, requests: 12, drainTimeout: 10s}
  - {name: high, rate: 20, requests: 20, drainTimeout: 10s}
`

// writeReportExperiment writes reportExperiment pointed at target.
func writeReportExperiment(t *testing.T, dir, target string) string {
	t.Helper()
	p := filepath.Join(dir, "exp.yaml")
	if err := os.WriteFile(p, []byte(strings.Replace(reportExperiment, "TARGET", target, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readReportCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

func TestReportRunOutputsAndCommand(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Config{TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond})
	defer srv.Close()
	dir := t.TempDir()
	exp := writeReportExperiment(t, dir, srv.BaseURL())
	p := func(n string) string { return filepath.Join(dir, n) }
	// A threshold that fails: the run exits 3 and still writes every report.
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", exp, "--out", p("r.json"), "--records", p("req.jsonl"),
		"--threshold", "p99(ttft) < 1ms", "--threshold", "error_rate < 1%", "--lag-bound", "1s",
		"--report", p("r.html"), "--report-md", p("r.md"), "--junit", p("r.xml"), "--series-csv", p("s.csv"))
	if code != exitThreshold {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, stdout, stderr)
	}
	for _, f := range []string{"r.html", "r.md", "r.xml", "s.csv"} {
		if !strings.Contains(stdout, "report written to "+p(f)) {
			t.Errorf("stdout does not say %s was written:\n%s", f, stdout)
		}
	}
	r := readResult(t, p("r.json"))
	if len(r.Scenarios) != 2 {
		t.Fatalf("%d scenarios", len(r.Scenarios))
	}

	// JUnit: a suite per stage, a case per threshold, the TTFT one failed.
	var ju struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	b, err := os.ReadFile(p("r.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, &ju); err != nil {
		t.Fatal(err)
	}
	if ju.Tests != 4 || ju.Failures != 2 || len(ju.Suites) != 2 || ju.Suites[1].Name != "spate.high" {
		t.Fatalf("junit %+v", ju)
	}
	c := ju.Suites[0].Cases[0]
	if c.Name != "p99(ttft) < 1ms" || c.Failure == nil || !strings.HasSuffix(c.Failure.Message, "ms, limit < 1 ms") {
		t.Errorf("ttft case %+v", c)
	}

	// Series CSV: a row per second of each stage.
	rows := readReportCSV(t, p("s.csv"))
	want := 1 + len(r.Scenarios[0].Series.SentPerS) + len(r.Scenarios[1].Series.SentPerS)
	if len(rows) != want {
		t.Errorf("series CSV has %d rows, want %d", len(rows), want)
	}

	// spate report writes the same Markdown to stdout.
	md, err := os.ReadFile(p("r.md"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli(t, context.Background(), "report", p("r.json"), "--format", "markdown")
	if code != 0 || out != string(md) || !strings.HasPrefix(out, "### spate: ❌ FAIL (2 of 4 thresholds failed)") {
		t.Errorf("report --format markdown: exit %d\n%s\n%s\nwant\n%s", code, out, errs, md)
	}

	// Records CSV: a row per request sent (warm-up none), from the .jsonl
	// input: the 32 scheduled, less what a stalled machine missed (31
	// rows seen, three suites at once).
	code, _, errs = cli(t, context.Background(), "report", p("req.jsonl"), "-o", p("req.csv"))
	if code != 0 {
		t.Fatalf("records csv: exit %d %s", code, errs)
	}
	sent, missed := 0, 0
	for _, sc := range r.Scenarios {
		sent, missed = sent+int(sc.Requests.Total), missed+int(sc.Load.Missed)
	}
	if rows := readReportCSV(t, p("req.csv")); len(rows) != 1+sent || sent+missed != 32 || rows[0][0] != "seq" {
		t.Errorf("records CSV has %d rows, want a header and the %d requests sent (%d missed, 32 scheduled)", len(rows), sent, missed)
	}

	// Two results overlay in HTML; the format comes from the extension.
	code, _, errs = cli(t, context.Background(), "report", p("r.json"), p("r.json"), "-o", p("both.html"))
	if code != 0 {
		t.Fatalf("overlay: exit %d %s", code, errs)
	}
	h, err := os.ReadFile(p("both.html"))
	if err != nil || !strings.Contains(string(h), "2 runs overlaid") {
		t.Errorf("overlay page: %v", err)
	}

	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{p("r.json"), "-o", p("x.pdf")}, exitUsage, "pass --format"},
		{[]string{p("r.json"), p("r.json"), "--format", "junit"}, exitUsage, "only html overlays"},
		{[]string{p("r.json"), "--format", "records-csv"}, exitUsage, "reads the .jsonl"},
		{[]string{p("req.jsonl"), "--format", "html"}, exitUsage, "converts only to"},
		{[]string{p("r.json"), "--format", "pdf"}, exitUsage, `--format "pdf"`},
		{[]string{p("missing.json")}, exitError, "missing.json"},
	} {
		code, _, errs := cli(t, context.Background(), append([]string{"report"}, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("report %q: exit %d %q, want %d and %q", c.args, code, errs, c.code, c.msg)
		}
	}
}
