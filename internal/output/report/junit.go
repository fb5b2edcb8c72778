package report

import (
	"encoding/xml"
	"fmt"
	"io"

	"github.com/spate-dev/spate/internal/verdict"
	"github.com/spate-dev/spate/internal/verdict/threshold"
	"github.com/spate-dev/spate/result"
)

// junitSuites is the JUnit XML root.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnit writes r's thresholds as JUnit XML: a test suite per stage and a
// test case per threshold; a failed threshold is a failure whose message
// gives the observed value against the limit, a threshold that could not
// be checked is an error, and so is a stage whose measurement was not
// valid (unless accepted with --allow-invalid), as a case of its own.
func JUnit(w io.Writer, r *result.Result) error {
	root := junitSuites{Name: "spate"}
	total := 0.0
	for _, sc := range r.Scenarios {
		s := junitSuite{Name: "spate." + sc.Name, Time: secs(sc.DurationS)}
		total += sc.DurationS
		s.Properties = []junitProperty{
			{"fingerprint", r.Fingerprint}, {"model", r.Provenance.Model},
			{"achieved_rate", fmt.Sprintf("%.4g", sc.Load.AchievedRate)}, {"valid", fmt.Sprint(sc.Load.Valid)},
		}
		for _, o := range sc.Thresholds {
			c := junitCase{Classname: "spate." + sc.Name, Name: o.Expr, Time: "0"}
			switch {
			case o.Err != "":
				c.Error = &junitProblem{Type: "threshold_error", Message: o.Err, Text: o.Err}
				s.Errors++
			case !o.Pass:
				msg := failureMessage(o)
				c.Failure = &junitProblem{Type: "threshold", Message: msg, Text: msg}
				s.Failures++
			}
			s.Tests++
			s.Cases = append(s.Cases, c)
		}
		if !verdict.Accepted(&sc, r.Config.AllowInvalid) {
			// No verdict to trust (exit 4): a CI reading the XML must not
			// see a pass.
			msg := fmt.Sprintf("the measurement is not valid (%s): %s", sc.Load.InvalidCause, sc.Load.InvalidReason)
			s.Cases = append(s.Cases, junitCase{Classname: "spate." + sc.Name, Name: "measurement valid", Time: "0",
				Error: &junitProblem{Type: "invalid_measurement", Message: msg, Text: msg}})
			s.Tests++
			s.Errors++
		}
		root.Tests += s.Tests
		root.Failures += s.Failures
		root.Errors += s.Errors
		root.Suites = append(root.Suites, s)
	}
	if s, ok := runSuite(r); ok {
		root.Tests += s.Tests
		root.Failures += s.Failures
		root.Errors += s.Errors
		root.Suites = append(root.Suites, s)
	}
	root.Time = secs(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("writing JUnit XML: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return fmt.Errorf("writing JUnit XML: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("writing JUnit XML: %w", err)
	}
	return nil
}

// runSuite is the run's own suite, when the run did not end as its stages'
// thresholds say: stopped by a threshold during the run (a merged run's
// shard whose abort its merged figures do not show) is a failure; a run
// that did not complete (interrupted, an error, a stage in which nothing
// succeeded) an error. A CI reading the XML must not see a pass then.
func runSuite(r *result.Result) (junitSuite, bool) {
	s := junitSuite{Name: "spate.run", Time: "0"}
	if r.Aborted != "" {
		msg := "stopped during the run: " + r.Aborted
		s.Cases = append(s.Cases, junitCase{Classname: "spate.run", Name: "not stopped by a threshold", Time: "0",
			Failure: &junitProblem{Type: "aborted", Message: msg, Text: msg}})
		s.Tests++
		s.Failures++
	}
	if r.Interrupted || r.Error != "" || r.Verdict == verdict.Error {
		msg := "the run did not complete"
		switch {
		case r.Interrupted:
			msg += ": interrupted (the result holds what was measured until then)"
		case r.Error != "":
			msg += ": " + r.Error
		}
		s.Cases = append(s.Cases, junitCase{Classname: "spate.run", Name: "run completed", Time: "0",
			Error: &junitProblem{Type: "run_error", Message: msg, Text: msg}})
		s.Tests++
		s.Errors++
	}
	return s, s.Tests > 0
}

// failureMessage says what a failed threshold observed against its limit:
// "observed 450 ms, limit < 400 ms".
func failureMessage(o threshold.Outcome) string {
	if o.Trigger && o.FiredAtS != nil {
		return fmt.Sprintf("trigger fired %.0f s into the stage (%d time(s)); its first condition observed %.4g", *o.FiredAtS, o.Fired, o.Value)
	}
	t, err := threshold.Parse(o.Expr)
	if err != nil {
		return fmt.Sprintf("observed %.4g; %s does not hold", o.Value, o.Expr)
	}
	unit := ""
	if u := thresholdUnit(t); u != "" {
		unit = " " + u
	}
	return fmt.Sprintf("observed %.4g%s, limit %s %.4g%s", o.Value, unit, t.Op, t.Value, unit)
}

// thresholdUnit is the unit of a threshold's value: ms for latencies.
func thresholdUnit(t threshold.Threshold) string {
	switch t.Metric {
	case "ttft", "itl", "tpot", "e2e", "ttft_intended", "e2e_intended", "schedule_lag":
		if t.Agg != threshold.AggCount {
			return "ms"
		}
	}
	return ""
}

func secs(s float64) string { return fmt.Sprintf("%.3f", s) }
