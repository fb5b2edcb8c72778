package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestExamplesParse(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		e, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(e.Stages) == 0 || e.Target.URL == "" {
			t.Errorf("%s: parsed empty: %+v", f, e)
		}
	}
}

func TestParse(t *testing.T) {
	e, err := Parse([]byte(`apiVersion: spate/v1
kind: Experiment
target: {url: "http://127.0.0.1:1/v1", api: chat, model: m}
slo: {ttft: 500ms}
stages:
  - {name: a, rate: 5, duration: 10s, warmup: 1s}
  - {name: b, concurrency: 4, requests: 20}
`), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if e.Stages[0].Duration != 10*time.Second || e.Stages[1].Concurrency != 4 || e.SLO["ttft"] != 500*time.Millisecond {
		t.Fatalf("%+v", e)
	}
}

func TestErrorsNameLineAndColumn(t *testing.T) {
	head := "apiVersion: spate/v1\nkind: Experiment\ntarget: {url: http://x/v1}\n"
	tests := []struct {
		name, body, want string
	}{
		{"unknown key", head + "stages:\n  - name: a\n    rate: 5\n    duraton: 10s\n", "x.yaml:7:5: unknown field \"duraton\""},
		{"wrong type", head + "stages:\n  - name: a\n    rate: fast\n", "x.yaml:6:11:"},
		{"both loops", head + "stages:\n  - name: a\n    rate: 5\n    concurrency: 2\n    duration: 1s\n", "x.yaml:5:"},
		{"no stop", head + "stages:\n  - name: a\n    rate: 5\n", "give a duration"},
		{"token rate", head + "stages: [{name: a, tokenRate: 1280, tokenRateBasis: output, duration: 1s}]\n", ""},
		{"token rate and rate", head + "stages: [{name: a, tokenRate: 1280, rate: 2, duration: 1s}]\n", "exactly one of rate (open loop, requests/s), tokenRate"},
		{"token basis", head + "stages: [{name: a, tokenRate: 1280, tokenRateBasis: input, duration: 1s}]\n", "x.yaml:4:53: stage \"a\": tokenRateBasis \"input\": use total"},
		{"basis alone", head + "stages: [{name: a, rate: 2, tokenRateBasis: output, duration: 1s}]\n", "tokenRateBasis applies to a tokenRate"},
		{"no stages", head, "no stages"},
		// Settings that do nothing in the stage's mode are errors.
		{"burstiness without gamma", head + "stages: [{name: a, rate: 2, burstiness: 0.5, duration: 1s}]\n", "x.yaml:4:41: stage \"a\": burstiness (--burstiness) is the shape of open-loop gamma arrivals"},
		{"burstiness with gamma", head + "stages: [{name: a, rate: 2, arrival: gamma, burstiness: 0.5, duration: 1s}]\n", ""},
		{"speed without trace", head + "workload: {speed: 2}\nstages: [{name: a, rate: 2, duration: 1s}]\n", "x.yaml:4:19: speed (--speed) scales a trace's clock"},
		{"stage speed without trace", head + "stages: [{name: a, rate: 2, duration: 1s, workload: {speed: 2}}]\n", "stage \"a\": speed (--speed)"},
		{"shaping a closed loop", head + "stages: [{name: a, concurrency: 2, complexityShaping: true, duration: 1s}]\n", "complexityShaping (--complexity-shaping) scales open-loop gaps"},
		{"version", "apiVersion: v2\nkind: Experiment\nstages: [{name: a, rate: 1, duration: 1s}]\n", "x.yaml:1:13: apiVersion must be"},
		{"duplicate stage", head + "stages:\n  - {name: a, rate: 1, duration: 1s}\n  - {name: a, rate: 1, duration: 1s}\n", "used twice"},
		{"key in file", head + "stages: [{name: a, rate: 1, duration: 1s}]\n", ""},
		{"api", "apiVersion: spate/v1\nkind: Experiment\ntarget: {api: grpc}\nstages: [{name: a, rate: 1, duration: 1s}]\n", "api \"grpc\""},
		{"bad verdict", head + "stages: [{name: a, rate: 1, duration: 1s}]\nactions:\n  passed: [{webhook: http://127.0.0.1:1}]\n", "unknown verdict \"passed\""},
		{"bad action", head + "stages: [{name: a, rate: 1, duration: 1s}]\nactions:\n  fail:\n    - {webhook: http://127.0.0.1:1, command: [x]}\n", "x.yaml:7:7: an action is exactly one of"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.body), "x.yaml")
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "nope.yaml")); err == nil || !os.IsNotExist(unwrapAll(err)) {
		t.Fatalf("err %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

func FuzzParse(f *testing.F) {
	b, _ := os.ReadFile("../examples/baseline-peak.yaml")
	f.Add(string(b))
	f.Add("apiVersion: spate/v1\nkind: Experiment\nstages: [{name: a, rate: 1, duration: 1s}]\n")
	f.Add("stages:\n  - [\n")
	// Deeper than yamllimit.MaxDepth: refused before go-yaml sees it.
	f.Add("stages: " + strings.Repeat("[", 101) + strings.Repeat("]", 101))
	f.Add("stages:\n" + strings.Repeat("- ", 101) + "x\n")
	f.Fuzz(func(t *testing.T, in string) {
		e, err := Parse([]byte(in), "f.yaml")
		if err == nil && len(e.Stages) == 0 {
			t.Fatal("accepted an experiment without stages")
		}
	})
}
