package plan

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/experiment"
)

// TestCheckNamesLineAndColumn: the checks that need the stages' parsers
// (thresholds, arrivals, SLOs, lengths) say where in the file, like the
// experiment package's own.
func TestCheckNamesLineAndColumn(t *testing.T) {
	head := "apiVersion: spate/v1\nkind: Experiment\ntarget: {url: http://x/v1}\n"
	tests := []struct {
		name, body, want string
	}{
		{"bad threshold", head + "stages: [{name: a, rate: 1, duration: 1s}]\nthresholds:\n  - \"p99(ttft) < 8 parsecs\"\n", "x.yaml:6:5: threshold"},
		{"bad arrival", head + "stages:\n  - name: a\n    rate: 5\n    arrival: weibull\n    duration: 1s\n", "unknown arrival"},
		{"bad slo", head + "slo: {ttfb: 1s}\nstages: [{name: a, rate: 1, duration: 1s}]\n", "unknown key"},
		{"bad lengths", head + "workload: {inputTokens: lots}\nstages: [{name: a, rate: 1, duration: 1s}]\n", "x.yaml:4:"},
		{"unknown stage", head + "stages: [{name: a, rate: 1, duration: 1s}]\nthresholds: [\"p99(ttft){stage:b} < 1s\"]\n", "selects stage \"b\""},
		{"abort on a count", head + "stages: [{name: a, rate: 1, duration: 1s}]\nthresholds: [{expr: \"achieved_rate > 1\", abortOnFail: true}]\n", "cannot abort"},
		{"ramp with concurrency", head + "stages: [{name: a, concurrency: 1, rampFrom: 2, duration: 1s}]\n", "ramp"},
		{"probe fraction", head + "stages: [{name: a, rate: 1, duration: 1s}]\nprobes: {suites: [benign], fraction: 2}\n", "--probe-fraction 2"},
		{"fine", head + "stages: [{name: a, rate: 1, duration: 1s}]\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := experiment.Parse([]byte(tc.body), "x.yaml")
			if err == nil {
				err = Check(e)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v\nwant an ErrInvalid containing %q", err, tc.want)
			}
		})
	}
}

// TestCheckGoExperiment: an experiment built in Go needs no apiVersion or
// kind, and its problems are named by their path.
func TestCheckGoExperiment(t *testing.T) {
	e := &experiment.Experiment{Stages: []experiment.Stage{{Name: "a", Rate: 1, Duration: time.Second}}}
	if err := Check(e); err != nil {
		t.Fatalf("a minimal experiment: %v", err)
	}
	e.Stages = append(e.Stages, experiment.Stage{Name: "b", Rate: 1, Concurrency: 2, Requests: 3})
	e.Thresholds = []experiment.ThresholdSpec{{Expr: "p99(ttft) <"}}
	err := Check(e)
	if err == nil || !strings.Contains(err.Error(), "stages[1]: stage \"b\": give exactly one of rate") || !strings.Contains(err.Error(), "thresholds[0]: ") {
		t.Fatalf("error %v", err)
	}
}
