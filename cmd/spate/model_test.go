package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/experiment"
)

// experimentOf returns the experiment spate run would run for args.
func experimentOf(t *testing.T, args ...string) *experiment.Experiment {
	t.Helper()
	c, f := newRunCmdFlags()
	if err := c.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	x, err := f.experiment(c, c.Flags().Args())
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// model is x's settings as JSON, without where it came from.
func model(t *testing.T, x *experiment.Experiment) string {
	t.Helper()
	c := *x
	c.APIVersion, c.Kind, c.Path, c.SHA256 = "", "", "", ""
	b, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFlagsAndFileFillTheSameModel: every setting given once as an
// experiment file and once as flags gives the same experiment.
func TestFlagsAndFileFillTheSameModel(t *testing.T) {
	dir := t.TempDir()
	wf, faults := filepath.Join(dir, "rag.yaml"), filepath.Join(dir, "faults.json")
	file := filepath.Join(dir, "e.yaml")
	os.WriteFile(file, []byte(`apiVersion: spate/v1
kind: Experiment
target:
  url: http://127.0.0.1:1/v1
  model: m
  api: completions
  stream: false
  ignoreEOS: "false"
  timeout: 2m
  idleTimeout: 30s
  method: POST
  path: /x
  body: '{"a": 1}'
  headers: {X-A: b, X-C: d}
  urls: [http://127.0.0.1:2/v1, http://127.0.0.1:3/v1]
  policy: failover
  retries: 2
  retryBackoff: 50ms
  retryBudget: 0.5
  attemptTimeout: 300ms
  traceHeader: false
  logprobs: 5
sut: {version: v9}
workload: {inputTokens: "64:8", outputTokens: "16", dataset: /data/d.jsonl, datasetFormat: jsonl, speed: 1, seed: 7}
slo: {ttft: 500ms, tpot: 50ms}
stages:
  - {name: main, rate: 5, arrival: gamma, burstiness: 0.5, rampFrom: 1, maxConcurrency: 4, duration: 10s, requests: 100, warmup: 1s, drainTimeout: 5s, complexityShaping: true}
thresholds: ["p99(ttft) < 800ms", "error_rate < 1%"]
measurement: {lagBound: 50ms, tokenizer: o200k_base, tokenizerSample: 0, allowInvalid: true, sloFrom: sent}
outputs: {result: r.json, records: q.jsonl, report: r.html, markdown: r.md, junit: j.xml, seriesCsv: s.csv, resultStdout: true, quiet: true, progress: 0s}
observe:
  scrape: [http://127.0.0.1:1/metrics, http://127.0.0.1:3/metrics]
  scrapeInterval: 2s
  scrapeMetrics: [vllm:x]
  metricsAddr: 127.0.0.1:0
  otlpEndpoint: http://127.0.0.1:4317
  otlpProtocol: grpc
  otlpTraces: true
  otlpInterval: 3s
chaos: {proxy: true, rules: ["error_rate=0.1", "latency=10ms"], requests: "oversize=0.1", faults: `+faults+`, stats: http://127.0.0.1:9/admin/stats, tMax: 1s, recoveryBin: 2s}
probes: {suites: [benign, injection-direct], fraction: 0.2}
vector: {url: "qdrant://127.0.0.1:1/c", dataset: "gen:100,8,2,10", metric: l2, k: 5, efSearch: [10, -1], load: false, truthCache: /tmp/truth}
workflow: `+wf+`
resilience: {enabled: false, window: 4s, recoveryWindow: 2s}
shard: {part: 0/2, count: 2, startAt: "2026-01-02T15:04:05Z", startLateMax: 5s, clockCheck: false}
`), 0o644)
	fromFile := experimentOf(t, file)
	fromFlags := experimentOf(t,
		"--target", "http://127.0.0.1:1/v1", "--model", "m", "--api", "completions", "--stream=false", "--ignore-eos", "false",
		"--timeout", "2m", "--idle-timeout", "30s", "--method", "POST", "--path", "/x", "--body", `{"a": 1}`,
		"--header", "X-A: b", "--header", "X-C: d", "--targets", "http://127.0.0.1:2/v1,http://127.0.0.1:3/v1",
		"--policy", "failover", "--retries", "2", "--retry-backoff", "50ms", "--retry-budget", "0.5", "--attempt-timeout", "300ms",
		"--no-trace-header", "--logprobs", "5", "--sut-version", "v9",
		"--input-tokens", "64:8", "--output-tokens", "16", "--dataset", "/data/d.jsonl", "--dataset-format", "jsonl", "--speed", "1", "--seed", "7",
		"--slo", "ttft=500ms,tpot=50ms",
		"--rate", "5", "--arrival", "gamma", "--burstiness", "0.5", "--ramp-from", "1", "--max-concurrency", "4", "--duration", "10s",
		"--requests", "100", "--warmup", "1s", "--drain-timeout", "5s", "--complexity-shaping",
		"--threshold", "p99(ttft) < 800ms", "--threshold", "error_rate < 1%",
		"--lag-bound", "50ms", "--tokenizer", "o200k_base", "--tokenizer-sample", "0", "--allow-invalid", "--slo-from", "sent",
		"-o", "r.json", "--records", "q.jsonl", "--report", "r.html", "--report-md", "r.md", "--junit", "j.xml", "--series-csv", "s.csv",
		"--result-stdout", "--quiet", "--progress", "0s",
		"--scrape", "http://127.0.0.1:1/metrics", "--scrape", "http://127.0.0.1:3/metrics", "--scrape-interval", "2s",
		"--scrape-metric", "vllm:x", "--metrics-addr", "127.0.0.1:0", "--otlp-endpoint", "http://127.0.0.1:4317", "--otlp-protocol", "grpc",
		"--otlp-traces", "--otlp-interval", "3s",
		"--chaos-proxy", "--chaos", "error_rate=0.1", "--chaos", "latency=10ms", "--request-chaos", "oversize=0.1", "--chaos-faults", faults,
		"--chaos-stats", "http://127.0.0.1:9/admin/stats", "--chaos-tmax", "1s", "--chaos-recovery-bin", "2s",
		"--probes", "benign,injection-direct", "--probe-fraction", "0.2",
		"--vector", "qdrant://127.0.0.1:1/c", "--vector-dataset", "gen:100,8,2,10", "--vector-metric", "l2", "--vector-k", "5",
		"--ef-search", "10,-1", "--vector-load=false", "--vector-truth-cache", "/tmp/truth", "--workflow", wf,
		"--resilience=false", "--resilience-window", "4s", "--recovery-window", "2s",
		"--shard", "0/2", "--shards", "2", "--start-at", "2026-01-02T15:04:05Z", "--start-late-max", "5s", "--clock-check=false",
	)
	if a, b := model(t, fromFile), model(t, fromFlags); a != b {
		t.Errorf("the file and the flags give different experiments:\nfile:  %s\nflags: %s", a, b)
	}
	// Every field of the model was set by both: none is left zero.
	var m map[string]any
	json.Unmarshal([]byte(model(t, fromFlags)), &m)
	for _, section := range []string{"Target", "Workload", "Outputs", "Observe", "Chaos", "Probes", "Vector", "Resilience", "Shard", "Measurement"} {
		for k, v := range m[section].(map[string]any) {
			if v == nil || v == "" || v == float64(0) {
				if !(section == "Target" && k == "APIKeyEnv") && !(section == "Workload" && strings.Contains("DatasetColumn SystemPrompt SharedPrefix Intents Popularity Turns Images Weights Checks", k)) && !(section == "Measurement" && k == "TokenizerSample") && !(section == "Outputs" && k == "Progress") {
					t.Errorf("%s.%s is not set by the test: add it to the file and the flags", section, k)
				}
			}
		}
	}
}

// TestFlagOverridesFile: a flag given with a file sets its field over the
// file's; load flags apply to every stage; thresholds and headers add to
// the file's.
func TestFlagOverridesFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "e.yaml")
	os.WriteFile(file, []byte(`apiVersion: spate/v1
kind: Experiment
target: {url: "http://127.0.0.1:1/v1", model: m, headers: {X-A: file, X-B: file}}
outputs: {result: from-file.json, report: r.html, junit: j.xml}
thresholds: ["p99(ttft) < 1s"]
stages:
  - {name: a, concurrency: 2, requests: 10}
  - {name: b, rate: 5, maxConcurrency: 3, duration: 10s}
`), 0o644)
	x := experimentOf(t, file, "--rate", "9", "-o", "mine.json", "--junit", "mine.xml", "--header", "X-A: flag", "--threshold", "rps > 1")
	if x.Outputs.Result != "mine.json" || x.Outputs.JUnit != "mine.xml" || x.Outputs.Report != "r.html" {
		t.Errorf("outputs %+v: want -o and --junit over the file's, the file's report kept", x.Outputs)
	}
	for _, s := range x.Stages {
		if s.Rate != 9 || s.Concurrency != 0 {
			t.Errorf("stage %s: rate %v concurrency %d, want --rate 9 and no concurrency", s.Name, s.Rate, s.Concurrency)
		}
	}
	if x.Stages[1].MaxConcurrency != 3 || x.Stages[0].Requests != 10 || x.Stages[1].Duration != 10*time.Second {
		t.Errorf("stages %+v: the file's other load settings are lost", x.Stages)
	}
	if len(x.Thresholds) != 2 || x.Thresholds[1].Expr != "rps > 1" {
		t.Errorf("thresholds %+v: want the file's then the flag's", x.Thresholds)
	}
	if h := x.Target.Headers; h["X-A"] != "flag" || h["X-B"] != "file" {
		t.Errorf("headers %v: want the flag's X-A and the file's X-B", h)
	}
	if x := experimentOf(t, file); x.Outputs.Result != "from-file.json" || x.Stages[0].Concurrency != 2 {
		t.Errorf("without flags: outputs %+v stages %+v", x.Outputs, x.Stages)
	}
	if x := experimentOf(t, "--target", "http://h/v1", "--rate", "1"); x.Outputs.Result != "spate-results/result.json" || x.Stages[0].Duration != 30*time.Second || x.Stages[0].Name != "main" {
		t.Errorf("flags alone: outputs %+v stages %+v", x.Outputs, x.Stages)
	}
}
