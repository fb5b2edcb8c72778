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
		// A 1 KB alias bomb passed validate and took 1.4 GB and 16 s in run.
		{"faults alias bomb", head + "stages:\n  - name: a\n    rate: 1\n    duration: 1s\n    faults:\n      url: /admin/faults\n      set:\n        a: &a [x, x, x, x, x, x, x, x, x, x]\n        b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n        c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n        d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n        e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n        f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n        g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n        h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n", "x.yaml:11:10: stage \"a\": faults.set has over 10000 values once its YAML aliases are expanded"},
		// validate passed what the injector then refused in run, without
		// file:line.
		{"faults unknown key", head + "stages:\n  - name: a\n    rate: 1\n    duration: 1s\n    faults:\n      url: /admin/faults\n      set: {error_rat: 0.1}\n", "x.yaml:10:12: stage \"a\": faults.set is neither the simulator's faults"},
		{"faults bad value", head + "stages:\n  - name: a\n    rate: 1\n    duration: 1s\n    faults:\n      url: /admin/faults\n      set: {error_rate: 3}\n", "error_rate must be in [0, 1]"},
		{"faults of the proxy", head + "chaos: {proxy: true}\nstages:\n  - name: a\n    rate: 1\n    duration: 1s\n    faults:\n      url: /admin/faults\n      set: {max_context: 10}\n", "not a fault set of the chaos proxy"},
		{"sim faults", head + "stages:\n  - name: a\n    rate: 1\n    duration: 1s\n    faults:\n      url: /admin/faults\n      set: {error_rate: 0.05, spike_rate: 0.1, spike_delay: 300ms}\n", ""},
		{"proxy faults", head + "stages:\n  - name: a\n    rate: 1\n    duration: 1s\n    faults:\n      url: /admin/faults\n      set: {reset_rate: 0.1, latency: \"fixed:5ms\"}\n", ""},
		{"prompt over the limit", head + "workload: {inputTokens: 1e8}\nstages: [{name: a, rate: 1, duration: 1s}]\n", "x.yaml:4:25: inputTokens 1e8: 100000000 tokens is over the promptTokens limit"},
		{"prompt limit raised", head + "limits: {promptTokens: 200000000}\nworkload: {inputTokens: 1e8}\nstages: [{name: a, rate: 1, duration: 1s}]\n", ""},
		{"fine", head + "stages: [{name: a, rate: 1, duration: 1s}]\n", ""},
		// It ran and could not judge (exit 4; before, exit 3 on a healthy server).
		{"trigger longer than its stage", head + "stages: [{name: a, rate: 1, duration: 8s}, {name: b, rate: 1, duration: 60s}]\nthresholds: [\"error_rate > 5% for 20s\"]\n",
			"x.yaml:5:14: trigger \"error_rate > 5% for 20s\": stage a sends load for 8s, no longer than the trigger's for 20s"},
		{"trigger on the stage it fits", head + "stages: [{name: a, rate: 1, duration: 8s}, {name: b, rate: 1, duration: 60s}]\nthresholds: [\"error_rate{stage:b} > 5% for 20s\"]\n", ""},
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

// TestCheckInputThresholdsByLoop: a threshold by input length on an
// open-loop stage is refused (kept from the send time only, judged from
// the intended time), and on a closed-loop stage, which has no intended
// time to lack, it is judged (it was refused with exit 2 as if the stage
// were open: docs/answers.md's example).
func TestCheckInputThresholdsByLoop(t *testing.T) {
	th := []experiment.ThresholdSpec{{Expr: "p99(e2e){input:512-1k} < 2s"}}
	closed := &experiment.Experiment{Stages: []experiment.Stage{{Name: "main", Concurrency: 8, Requests: 100}}, Thresholds: th}
	if err := Check(closed); err != nil {
		t.Fatalf("closed loop: %v", err)
	}
	open := &experiment.Experiment{Stages: []experiment.Stage{{Name: "main", Rate: 5, Duration: time.Second}}, Thresholds: th}
	if err := Check(open); err == nil || !strings.Contains(err.Error(), "kept from the send time only") {
		t.Fatalf("open loop: %v, want refused", err)
	}
}
