package report

import (
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/spate-dev/spate/internal/verdict/threshold"
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
