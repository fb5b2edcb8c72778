package report

import (
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"encoding/xml"
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
	if got.Tests != 5 || got.Failures != 2 || got.Errors != 2 || len(got.Suites) != 2 {
		t.Errorf("tests %d failures %d errors %d suites %d, want 5 2 2 2", got.Tests, got.Failures, got.Errors, len(got.Suites))
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
