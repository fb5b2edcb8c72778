package report

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/spate-dev/spate/internal/golden"
	"github.com/spate-dev/spate/internal/verdict/threshold"
	"github.com/spate-dev/spate/result"
)

func TestJUnitGolden(t *testing.T) {
	r := sample()
	r.Scenarios[0].Thresholds = append(r.Scenarios[0].Thresholds,
		threshold.Outcome{Expr: "goodput >= 99.5%", Value: 0.99, Pass: false},
		threshold.Outcome{Expr: `p99(e2e) < 2s & "quoted" <x>`, Value: 0, Err: "cannot parse"})
	var b bytes.Buffer
	if err := JUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "junit.golden", b.Bytes())
	// The output is well-formed XML with the counts a CI reads.
	var got junitSuites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	if got.Tests != 6 || got.Failures != 2 || got.Errors != 3 || len(got.Suites) != 2 {
		t.Errorf("tests %d failures %d errors %d suites %d, want 6 2 3 2 (the invalid peak stage is an error)", got.Tests, got.Failures, got.Errors, len(got.Suites))
	}
}

func TestFailureMessage(t *testing.T) {
	for _, c := range []struct {
		o    threshold.Outcome
		want string
	}{
		{threshold.Outcome{Expr: "p99(ttft) < 400ms", Value: 450}, "observed 450 ms, limit < 400 ms"},
		{threshold.Outcome{Expr: "p99(ttft) < 1s", Value: 1200}, "observed 1200 ms, limit < 1000 ms"},
		{threshold.Outcome{Expr: "goodput >= 95%", Value: 0.9}, "observed 0.9, limit >= 0.95"},
		{threshold.Outcome{Expr: "count(e2e) > 10", Value: 3}, "observed 3, limit > 10"},
		{threshold.Outcome{Expr: "nonsense", Value: 3}, "observed 3; nonsense does not hold"},
	} {
		if got := failureMessage(c.o); got != c.want {
			t.Errorf("%s: %q, want %q", c.o.Expr, got, c.want)
		}
	}
}

// TestJUnitInvalidIsNotGreen: a run whose measurement was invalid (exit 4)
// has one more error case in its stage's suite, so a CI that reads only the
// XML does not see a pass; accepted with --allow-invalid, it has none.
func TestJUnitInvalidIsNotGreen(t *testing.T) {
	suite := func(accepted bool) junitSuite {
		r := sample()
		r.Config.AllowInvalid = accepted
		r.Scenarios[1].Load.Valid, r.Scenarios[1].Load.InvalidCause, r.Scenarios[1].Load.InvalidReason = false, "missed_sends", "3 scheduled requests were not sent"
		var b bytes.Buffer
		if err := JUnit(&b, r); err != nil {
			t.Fatal(err)
		}
		var got junitSuites
		if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatalf("not XML: %v", err)
		}
		return got.Suites[1]
	}
	acc, inv := suite(true), suite(false)
	last := inv.Cases[len(inv.Cases)-1]
	if inv.Errors != acc.Errors+1 || inv.Tests != acc.Tests+1 || last.Name != "measurement valid" || last.Error == nil ||
		last.Error.Type != "invalid_measurement" || !strings.Contains(last.Error.Message, "3 scheduled requests were not sent") {
		t.Errorf("invalid: %d errors in %d tests, last case %+v; accepted: %d errors in %d tests", inv.Errors, inv.Tests, last, acc.Errors, acc.Tests)
	}
	for _, c := range acc.Cases {
		if c.Name == "measurement valid" {
			t.Errorf("accepted (--allow-invalid): a measurement case %+v", c)
		}
	}
}

// TestJUnitRunNotGreen: a run stopped by a threshold (a merged run whose
// shard aborted, its merged thresholds passing) has a failure, and a run
// that did not complete an error, in a suite of the run's own: the XML
// had neither, a CI reading it saw green while the exit code was 3 or 1.
// Markdown's headline says the same.
func TestJUnitRunNotGreen(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edit     func(r *result.Result)
		failures int
		errors   int
		headline string
	}{
		{"shard aborted", func(r *result.Result) {
			r.ThresholdsPassed, r.Aborted = false, "shard 1: stage peak: p99(ttft) < 1s failed during the run (1200): stopped"
		}, 1, 0, "· stopped: shard 1: stage peak"},
		{"interrupted", func(r *result.Result) { r.Interrupted = true }, 0, 1, "⚠️ INCOMPLETE"},
		{"nothing succeeded", func(r *result.Result) { r.Verdict = "error" }, 0, 1, "⚠️ INCOMPLETE"},
	} {
		r := &result.Result{Schema: result.Schema, ThresholdsPassed: true, Verdict: "pass", Scenarios: []result.Scenario{{Name: "peak",
			Load: result.Load{Mode: "closed", Valid: true}, Thresholds: []result.ThresholdOutcome{{Expr: "error_rate < 5%", Value: 0.01, Pass: true}}}}}
		tc.edit(r)
		var b, m bytes.Buffer
		if err := JUnit(&b, r); err != nil {
			t.Fatal(err)
		}
		if err := Markdown(&m, r); err != nil {
			t.Fatal(err)
		}
		var got junitSuites
		if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatalf("not XML: %v", err)
		}
		if got.Failures != tc.failures || got.Errors != tc.errors || got.Suites[len(got.Suites)-1].Name != "spate.run" {
			t.Errorf("%s: %d failures, %d errors, want %d and %d in suite spate.run\n%s", tc.name, got.Failures, got.Errors, tc.failures, tc.errors, b.String())
		}
		if head, _, _ := strings.Cut(m.String(), "\n"); !strings.Contains(head, tc.headline) {
			t.Errorf("%s: markdown headline %q, want %q", tc.name, head, tc.headline)
		}
	}
}
