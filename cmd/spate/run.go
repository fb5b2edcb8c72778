package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/spate-dev/spate"
	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/flagbind"
	"github.com/spate-dev/spate/internal/output/progress"
	"github.com/spate-dev/spate/internal/plan"
)

type (
	xp = experiment.Experiment
	st = experiment.Stage
)

// runBindings are the flags of spate run, each the field of the experiment
// it sets (docs/design.md §4); the load flags (those of a stage) apply to every
// stage of a file.
var runBindings = []flagbind.Binding{
	{Group: "Target"},
	{Name: "target", Usage: "base URL of the API, e.g. http://127.0.0.1:8000/v1 (required)", X: func(x *xp) any { return &x.Target.URL }},
	{Name: "model", Usage: "model name to request (default: the first model the server lists)", X: func(x *xp) any { return &x.Target.Model }},
	{Name: "api", Usage: "API to drive: chat, completions, responses, embeddings, rerank, score or http", X: func(x *xp) any { return &x.Target.API }},
	{Name: "api-key", Usage: "API key (default $OPENAI_API_KEY); never written anywhere", X: func(x *xp) any { return &x.Target.APIKey }},
	{Name: "stream", Usage: "ask for streamed responses (--stream=false for whole responses)", X: func(x *xp) any { return &x.Target.Stream }},
	{Name: "logprobs", Usage: "ask every request for N top logprobs a token (1-20) and report ICE, the spread of answer entropy over a conversation's turns", X: func(x *xp) any { return &x.Target.Logprobs }},
	{Name: "ignore-eos", Usage: "send ignore_eos so servers generate exactly max_tokens: auto (not to api.openai.com), true, false", X: func(x *xp) any { return &x.Target.IgnoreEOS }},
	{Name: "timeout", Usage: "timeout of one request", X: func(x *xp) any { return &x.Target.Timeout }},
	{Name: "idle-timeout", Usage: "fail a request whose response is silent this long", X: func(x *xp) any { return &x.Target.IdleTimeout }},
	{Name: "method", Usage: "--api http: request method (default GET, or POST with a body)", X: func(x *xp) any { return &x.Target.Method }},
	{Name: "path", Usage: "--api http: path appended to --target", X: func(x *xp) any { return &x.Target.Path }},
	{Name: "body", Usage: "--api http: request body", X: func(x *xp) any { return &x.Target.Body }},
	{Name: "header", Usage: "extra request header 'Name: value' (repeatable)", X: func(x *xp) any { return &x.Target.Headers }, Join: true},
	{Name: "targets", Usage: "more upstreams of the same service beside --target, URL,URL (see --policy)", X: func(x *xp) any { return &x.Target.URLs }},
	{Name: "policy", Usage: "with --targets: round-robin, or failover (next upstream on an error before any token)", X: func(x *xp) any { return &x.Target.Policy }},
	{Name: "retries", Usage: "retry a request that failed before any token (connect, timeout, 5xx, 429) up to N more times", X: func(x *xp) any { return &x.Target.Retries }},
	{Name: "retry-backoff", Usage: "base of the exponential backoff between retries (with jitter)", X: func(x *xp) any { return &x.Target.RetryBackoff }},
	{Name: "retry-budget", Usage: "extra attempts (retries and failovers) allowed, as a fraction of requests", X: func(x *xp) any { return &x.Target.RetryBudget }},
	{Name: "attempt-timeout", Usage: "give up one attempt after this long and fail over or retry (0: only --timeout)", X: func(x *xp) any { return &x.Target.AttemptTimeout }},
	{Name: "sut-version", Usage: "version of the system under test, recorded in the result's provenance", X: func(x *xp) any { return &x.SUT.Version }},

	{Group: "Load (every stage)"},
	{Name: "rate", Usage: "open loop: requests per second", S: func(s *st) any { return &s.Rate }, Also: flagbind.Loop("rate")},
	{Name: "concurrency", Usage: "closed loop: number of concurrent workers", S: func(s *st) any { return &s.Concurrency }, Also: flagbind.Loop("concurrency")},
	{Name: "token-rate", Usage: "open loop in tokens per second: gaps scaled by each request's expected tokens (input + output)", S: func(s *st) any { return &s.TokenRate }, Also: flagbind.Loop("token-rate")},
	{Name: "token-rate-basis", Usage: "what --token-rate counts: total (input + output tokens) or output", S: func(s *st) any { return &s.TokenRateBasis }},
	{Name: "max-concurrency", Usage: "open loop: cap on requests in flight (0: none)", S: func(s *st) any { return &s.MaxConcurrency }},
	{Name: "arrival", Usage: "open-loop arrivals: constant, poisson, gamma, or trace (replay the dataset's timestamps)", S: func(s *st) any { return &s.Arrival }},
	{Name: "burstiness", Usage: "gamma shape: 1 is Poisson, <1 burstier, >1 more regular", S: func(s *st) any { return &s.Burstiness }},
	{Name: "ramp-from", Usage: "open loop: ramp the rate linearly from this to --rate over warm-up and duration (constant or poisson)", S: func(s *st) any { return &s.RampFrom }},
	{Name: "duration", Usage: "how long to send after warm-up (default 30s unless --requests)", S: func(s *st) any { return &s.Duration }},
	{Name: "requests", Usage: "how many requests to send after warm-up", S: func(s *st) any { return &s.Requests }},
	{Name: "warmup", Usage: "warm-up sent first and left out of the figures", S: func(s *st) any { return &s.Warmup }},
	{Name: "drain-timeout", Usage: "after the last send, how long to wait for requests in flight", S: func(s *st) any { return &s.DrainTimeout }},
	{Name: "stampede", Usage: "open loop: add cache stampedes, bursts for one key: every=30s,width=200ms,rate=500[,start=10s][,keys=fresh|expiring]", S: func(s *st) any { return &s.Stampede }},
	{Name: "complexity-shaping", Usage: "scale each open-loop gap by the request's complexity score: rate × 0.75^(score/20)", S: func(s *st) any { return &s.ComplexityShaping }},

	{Group: "Workload"},
	{Name: "dataset", Usage: "file of requests: spate JSONL ({\"prompt\"|\"messages\"|\"body\": ...} a line), ShareGPT, OpenAI batch or CSV", X: func(x *xp) any { return &x.Workload.Dataset }},
	{Name: "dataset-format", Usage: "format of --dataset: jsonl, sharegpt, batch, csv or mooncake (default: guessed from the file)", X: func(x *xp) any { return &x.Workload.DatasetFormat }},
	{Name: "trace-block-size", Usage: "tokens per hash id of a Mooncake trace --dataset (default 512)", X: func(x *xp) any { return &x.Workload.TraceBlockSize }},
	{Name: "speed", Usage: "with --arrival trace: replay the dataset's timestamps this many times faster", X: func(x *xp) any { return &x.Workload.Speed }},
	{Name: "input-tokens", Usage: "synthetic prompt length in tokens: N, MEAN:SD, uniform:LO:HI, lognormal:MEAN:SD, choice:4096@0.5,16384@0.5, empirical:FILE", X: func(x *xp) any { return &x.Workload.InputTokens }},
	{Name: "output-tokens", Usage: "output tokens to ask for (max_tokens), a distribution like --input-tokens; 0 for the server's default", X: func(x *xp) any { return &x.Workload.OutputTokens }},
	{Name: "seed", Usage: "seed of the arrival schedule and the synthetic workload", X: func(x *xp) any { return &x.Workload.Seed }},

	{Group: "SLO, threshold and figure"},
	{Name: "slo", Usage: "per-request objectives for goodput, e.g. ttft=500ms,tpot=50ms (keys ttft, tpot, itl, e2e)", X: func(x *xp) any { return &x.SLO }},
	{Name: "threshold", Usage: "pass/fail expression, e.g. 'p99(ttft) < 800ms' (repeatable; exit 3 if any fails)", X: func(x *xp) any { return &x.Thresholds }, Join: true},
	{Name: "lag-bound", Usage: "floor of the validity rule's lag bound (the bound is the largest of it, twice the schedule's median gap and a tenth of the latency p50)", X: func(x *xp) any { return &x.Measurement.LagBound }},
	{Name: "allow-invalid", Usage: "accept an invalid measurement: exit 0 instead of 4 (the verdict stays invalid)", X: func(x *xp) any { return &x.Measurement.AllowInvalid }},
	{Name: "slo-from", Usage: "open loop: judge thresholds on ttft, e2e and goodput from the intended or sent time", X: func(x *xp) any { return &x.Measurement.SLOFrom }},
	{Name: "tokenizer", Usage: "tokenizer of synthetic prompt lengths and local token counts: cl100k_base, o200k_base, llama3, a tokenizer.json path, or server[:URL] (the target's /tokenize)", X: func(x *xp) any { return &x.Measurement.Tokenizer }},
	{Name: "tokenizer-sample", Usage: "count output tokens locally on every Nth request to check the server's usage (0: only when usage is missing)", X: func(x *xp) any { return &x.Measurement.TokenizerSample }},
	{Name: "limit", Usage: "change a limit on what is kept of responses and read from files, KEY=VALUE (repeatable): responseText, responseBody, modelId, modelList, fileSize, lineSize (sizes, e.g. 16MiB), promptTokens, faultSetNodes", X: func(x *xp) any { return &x.Limits }, Join: true},
	{Name: "resilience", Usage: "compute resilience figures (P99 slope, recovery time after a load step or faults) for each stage", X: func(x *xp) any { return &x.Resilience.Enabled }},
	{Name: "resilience-window", Usage: "sliding window of the resilience slope (whole seconds, ≥ 2s)", X: func(x *xp) any { return &x.Resilience.Window }},
	{Name: "recovery-window", Usage: "window of the windowed P99 that recovery time is measured on (whole seconds)", X: func(x *xp) any { return &x.Resilience.RecoveryWindow }},

	{Group: "Output"},
	{Name: "out", Short: "o", Usage: "result file to write", X: func(x *xp) any { return &x.Outputs.Result }},
	{Name: "records", Usage: "also write every request as a JSON line to this file", X: func(x *xp) any { return &x.Outputs.Records }},
	{Name: "report", Usage: "also write a self-contained HTML report to this file", X: func(x *xp) any { return &x.Outputs.Report }},
	{Name: "report-md", Usage: "also write a Markdown summary (for a pull-request comment) to this file", X: func(x *xp) any { return &x.Outputs.Markdown }},
	{Name: "junit", Usage: "also write the thresholds as JUnit XML to this file", X: func(x *xp) any { return &x.Outputs.JUnit }},
	{Name: "series-csv", Usage: "also write the per-second series as CSV to this file", X: func(x *xp) any { return &x.Outputs.SeriesCSV }},
	{Name: "result-stdout", Usage: "print the result JSON on stdout at the end (for kubectl logs; use with --quiet)", X: func(x *xp) any { return &x.Outputs.ResultStdout }},
	{Name: "quiet", Usage: "print no progress and no summary", X: func(x *xp) any { return &x.Outputs.Quiet }},
	{Name: "progress", Usage: "interval of progress lines on stderr (0: none)", X: func(x *xp) any { return &x.Outputs.Progress }},

	{Group: "Observability"},
	{Name: "scrape", Usage: "scrape this Prometheus URL of the server under test during each stage, e.g. http://127.0.0.1:8000/metrics (repeatable)", X: func(x *xp) any { return &x.Observe.Scrape }, Array: true},
	{Name: "scrape-interval", Usage: "interval between scrapes of --scrape URLs", X: func(x *xp) any { return &x.Observe.ScrapeInterval }},
	{Name: "scrape-metric", Usage: "also keep this scraped metric as a series: name or name{label=\"value\"} (repeatable)", X: func(x *xp) any { return &x.Observe.ScrapeMetrics }, Array: true},
	{Name: "metrics-addr", Usage: "serve spate's live metrics for Prometheus at http://ADDR/metrics, e.g. 127.0.0.1:9464", X: func(x *xp) any { return &x.Observe.MetricsAddr }},
	{Name: "otlp-endpoint", Usage: "push spate's live metrics over OTLP to this URL, e.g. http://127.0.0.1:4318 (http) or http://127.0.0.1:4317 (grpc)", X: func(x *xp) any { return &x.Observe.OTLPEndpoint }},
	{Name: "otlp-protocol", Usage: "OTLP protocol: http or grpc", X: func(x *xp) any { return &x.Observe.OTLPProtocol }},
	{Name: "otlp-traces", Usage: "also push one span per request over OTLP, with the trace and span id of its traceparent header", X: func(x *xp) any { return &x.Observe.OTLPTraces }},
	{Name: "otlp-interval", Usage: "interval between OTLP metric pushes", X: func(x *xp) any { return &x.Observe.OTLPInterval }},

	{Group: "Chaos"},
	{Name: "chaos-proxy", Usage: "start the chaos proxy in front of --target (a stage's faults: url /admin/faults then reach it)", X: func(x *xp) any { return &x.Chaos.Proxy }},
	{Name: "chaos", Usage: "run-wide fault rule on the chaos proxy, e.g. 'error_rate=0.1,latency=lognormal:3.2:0.5,from=10s,until=20s' (repeatable; implies --chaos-proxy)", X: func(x *xp) any { return &x.Chaos.Rules }, Array: true},
	{Name: "chaos-faults", Usage: "JSON fault set for the chaos proxy, as PUT to /admin/faults (implies --chaos-proxy)", X: func(x *xp) any { return &x.Chaos.Faults }},
	{Name: "chaos-stats", Usage: "GET /admin/stats URL of a chaos proxy run elsewhere (spate chaos proxy), for the chaos figures", X: func(x *xp) any { return &x.Chaos.Stats }},
	{Name: "request-chaos", Usage: "fractions of chaos requests, e.g. 'max_tokens_1=0.05,oversize=0.02,malformed=0.01,max_context=8192'", X: func(x *xp) any { return &x.Chaos.Requests }},
	{Name: "chaos-tmax", Usage: "T_max of MSR", X: func(x *xp) any { return &x.Chaos.TMax }},
	{Name: "chaos-recovery-bin", Usage: "bin width that recovery after a fault window is judged on", X: func(x *xp) any { return &x.Chaos.RecoveryBin }},

	{Group: "Security probe"},
	{Name: "probes", Usage: "interleave security probes: built-in suites (spate probe list), 'all', or YAML suite files, comma-separated", X: func(x *xp) any { return &x.Probes.Suites }},
	{Name: "probe-fraction", Usage: "with --probes: share of requests that are probes, in (0, 1]", X: func(x *xp) any { return &x.Probes.Fraction }},

	{Group: "Vector search and workflow"},
	{Name: "vector", Usage: "drive a vector database instead: pgvector://user:pass@host:port/db?table=T, chroma://host:port/collection or qdrant://host:port/collection", X: func(x *xp) any { return &x.Vector.URL }},
	{Name: "vector-dataset", Usage: "with --vector: JSONL file of {\"vector\": [...]} and {\"query\": [...]} lines, or gen:N,DIM,CLUSTERS,QUERIES for generated clusters (seeded by --seed)", X: func(x *xp) any { return &x.Vector.Dataset }},
	{Name: "vector-metric", Usage: "with --vector: distance of the index and the ground truth: cosine, l2 or dot", X: func(x *xp) any { return &x.Vector.Metric }},
	{Name: "vector-k", Usage: "with --vector: neighbours asked for (recall@k)", X: func(x *xp) any { return &x.Vector.K }},
	{Name: "ef-search", Usage: "with --vector: search breadths to sweep, one stage each (e.g. 10,40,100; -1: exact search), giving the recall-vs-QPS frontier", X: func(x *xp) any { return &x.Vector.EfSearch }},
	{Name: "vector-load", Usage: "with --vector: load the dataset into the database first (replaces the table or collection)", X: func(x *xp) any { return &x.Vector.Load }},
	{Name: "vector-proxy", Usage: "with --vector (chroma://, qdrant://): put the chaos proxy in front of the database (--chaos, --chaos-faults, stages' faults)", X: func(x *xp) any { return &x.Vector.Proxy }},
	{Name: "vector-truth-cache", Usage: "with --vector: directory caching exact top-k ground truth (default: the user cache dir, spate/truth)", X: func(x *xp) any { return &x.Vector.TruthCache }},
	{Name: "workflow", Usage: "run this multi-step workflow (YAML) for every request: per-step timing and failures", X: func(x *xp) any { return &x.Workflow }},

	{Group: "Sharding"},
	{Name: "shard", Usage: "send shard I of N of the load (I from 0), e.g. 0/4; merge the shards' results with spate merge", X: func(x *xp) any { return &x.Shard.Part }},
	{Name: "shards", Usage: "shard count when the index comes from $JOB_COMPLETION_INDEX (Kubernetes Indexed Job); default $SPATE_SHARDS", X: func(x *xp) any { return &x.Shard.Count }},
	{Name: "start-at", Usage: "wait until this time (RFC 3339, e.g. 2026-01-02T15:04:05Z) before sending, so that shards start together", X: func(x *xp) any { return &x.Shard.StartAt }},
	{Name: "start-late-max", Usage: "with --start-at: fail when the start time is already this far in the past", X: func(x *xp) any { return &x.Shard.StartLateMax }},
	{Name: "clock-check", Usage: "when sharded, estimate this machine's clock offset against the target's HTTP Date header (a few HEAD requests, about 1-3 s)", X: func(x *xp) any { return &x.Shard.ClockCheck }},
}

// runFlags are spate run's flags: the bound table, plus the few that are
// not a field as they are (--workload reads a file into the workload,
// --name names the one stage of a run without a file, --no-trace-header is
// target.traceHeader: false, --no-summary is for wrappers).
type runFlags struct {
	bound        *flagbind.Flags
	workloadFile string
	name         string
	noSummary    bool
	noTrace      bool
}

// addRunFlags adds spate run's flags to c; out is --out's default.
func addRunFlags(c *cobra.Command, out string) *runFlags {
	vals := plan.Defaults()
	vals.Outputs.Result = out
	fl := c.Flags()
	f := &runFlags{bound: flagbind.Register(fl, runBindings, vals)}
	flagbind.GroupHelp(c)
	fl.BoolVar(&f.noTrace, "no-trace-header", false, "do not send a W3C traceparent header (sent by default; its ids are in --records)")
	fl.StringVar(&f.workloadFile, "workload", "", "workload file (YAML): intents, shared prefixes, popularity, turns, images, checks (see examples/)")
	fl.StringVar(&f.name, "name", vals.Stages[0].Name, "scenario name in the result (of the one stage of a run without an experiment file)")
	fl.BoolVar(&f.noSummary, "no-summary", false, "print progress but no summary (for wrappers that print their own)")
	_ = fl.MarkHidden("no-summary")
	return f
}

// experiment is the experiment spate run runs: the file's, when one is
// given, else one stage made of the flags, with every flag given on the
// command line setting its field.
func (f *runFlags) experiment(c *cobra.Command, args []string) (*experiment.Experiment, error) {
	fl := c.Flags()
	x := &experiment.Experiment{Stages: []experiment.Stage{{Name: f.name}}}
	if len(args) == 1 {
		var err error
		if x, err = experiment.LoadContext(c.Context(), args[0]); err != nil {
			return nil, &exitErr{code: exitUsage, err: err}
		}
	} else if !fl.Changed("duration") && !fl.Changed("requests") && f.bound.Values.Stages[0].Arrival != "trace" {
		x.Stages[0].Duration = 30 * time.Second
	}
	if f.workloadFile != "" {
		w, err := experiment.LoadWorkloadContext(c.Context(), f.workloadFile)
		if err != nil {
			return nil, usageErr("--workload: %v", err)
		}
		x.Workload, x.WorkloadFile = x.Workload.Merge(*w), f.workloadFile
	}
	if err := f.bound.Apply(fl, x); err != nil {
		return nil, usageErr("%v", err)
	}
	if fl.Changed("no-trace-header") {
		x.Target.TraceHeader = new(!f.noTrace)
	}
	if x.Outputs.Result == "" && !fl.Changed("out") {
		x.Outputs.Result = f.bound.Values.Outputs.Result
	}
	return x, nil
}

// options are the spate.Run options of a command: its output writers,
// live progress on an interactive terminal.
func options(c *cobra.Command) []spate.Option {
	opts := []spate.Option{spate.WithStdout(c.OutOrStdout()), spate.WithStderr(c.ErrOrStderr())}
	file, ok := c.ErrOrStderr().(*os.File)
	if progress.Interactive(ok && term.IsTerminal(int(file.Fd())), os.Getenv) {
		opts = append(opts, spate.WithLiveProgress())
	}
	return opts
}

func newRunCmd() *cobra.Command {
	c, _ := newRunCmdFlags()
	return c
}

// newRunCmdFlags returns spate run and its flags.
func newRunCmdFlags() (*cobra.Command, *runFlags) {
	var f *runFlags
	c := &cobra.Command{
		Use:     "run [EXPERIMENT.yaml]",
		Short:   "Send load to a target and measure it",
		Long:    help("run"),
		Example: help("run.example"),
		Args:    cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			x, err := f.experiment(c, args)
			if err != nil {
				return err
			}
			opts := options(c)
			if f.noSummary {
				opts = append(opts, spate.WithoutSummary())
			}
			_, err = spate.Run(c.Context(), x, opts...)
			return err
		},
	}
	f = addRunFlags(c, "spate-results/result.json")
	return c, f
}
