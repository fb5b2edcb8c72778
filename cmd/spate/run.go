package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/client/plainhttp"
	"github.com/spate-dev/spate/internal/engine"
	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/output/report"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/schedule"
	"github.com/spate-dev/spate/internal/verdict/gate"
	"github.com/spate-dev/spate/internal/verdict/threshold"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/internal/workload/payload"
	"github.com/spate-dev/spate/internal/workload/tokenizer"
	"github.com/spate-dev/spate/result"
)

// version is spate's version, recorded in every result.
var version = "0.1.0-dev"

// runFlags are the flags of spate run (DESIGN.md §4).
type runFlags struct {
	target, model, api, apiKey                 string
	rate                                       float64
	concurrency, maxConcurrency, requests      int
	arrival                                    string
	burstiness, rampFrom                       float64
	duration, warmup                           time.Duration
	dataset, inputTokens, outputTokens         string
	slo                                        string
	thresholds                                 []string
	out, records                               string
	seed                                       uint64
	stream                                     bool
	ignoreEOS                                  string
	timeout, idleTimeout, drainTimeout, lagBnd time.Duration
	tokenizerSample                            int
	tokenizerName                              string
	tok                                        *tokenizer.BPE
	method, path, body                         string
	headers                                    []string
	name, sutVersion                           string
	experiment, experimentSHA256               string // the experiment file, if any, and its digest
	actions                                    map[string][]gate.Action
	aborts                                     []runner.Abort
	stageWorkloads                             map[string]*experiment.Workload
	workloadSpec                               workload.Spec // the experiment's or the --workload file's
	workloadFile, datasetFormat                string
	speed                                      float64
	shaping                                    bool
	fileStages                                 []runner.Stage // its stages
	quiet, noSummary, noTraceHeader            bool
	progressEvery                              time.Duration
	exts                                       []runExtension
}

// A runExtension wires one feature into spate run from its own file of
// this package (registered in runExtensions by an init func): its flags,
// what it changes before the plan is built, what it adds to the plan, and
// what it does with the result.
type runExtension interface {
	// addFlags adds the extension's flags to spate run.
	addFlags(fs *pflag.FlagSet)
	// before runs after flags and the experiment file are read and before
	// the plan is built; it may change f (e.g. point f.target at a proxy).
	// The returned func, if any, is called when the run is over.
	before(cmd *cobra.Command, f *runFlags) (cleanup func(), err error)
	// after may change the built plan: wrap p.Client, add p.Observers.
	after(cmd *cobra.Command, f *runFlags, p *runner.Plan) error
	// finish is called with the result once it is written (path out, "" if
	// none); an error makes the run exit 1.
	finish(cmd *cobra.Command, f *runFlags, res *result.Result, out string) error
}

// runExtensions are the constructors of spate run's extensions.
var runExtensions []func() runExtension

func newRunCmd() *cobra.Command {
	f := &runFlags{}
	for _, newExt := range runExtensions {
		f.exts = append(f.exts, newExt())
	}
	c := &cobra.Command{
		Use:   "run [EXPERIMENT.yaml]",
		Short: "Send load to a target and measure it",
		Long: `Send load to an OpenAI-compatible server (or any HTTP service with --api http)
and measure what users feel: time to first token, inter-token latency, time per
output token, end-to-end latency (each also from the intended send time),
throughput and goodput. Writes a result file (schema spate/result/v1).

An experiment file (apiVersion spate/v1, kind Experiment) gives the same
settings and several stages; flags given on the command line override it, and
load flags (--rate, --concurrency, --duration, ...) apply to every stage.

Exit codes: 0 success, 1 error, 2 usage, 3 thresholds failed (results written).`,
		Example: `  spate run --target http://127.0.0.1:8000/v1 --model M --api chat \
    --rate 20 --arrival poisson --duration 60s --input-tokens 512:64 --output-tokens 128 \
    --slo ttft=500ms,tpot=50ms --threshold 'p99(ttft) < 800ms' --out result.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if err := f.applyExperiment(cmd, args[0]); err != nil {
					return err
				}
			}
			return runRun(cmd, f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.target, "target", "", "base URL of the API, e.g. http://127.0.0.1:8000/v1 (required)")
	fl.StringVar(&f.model, "model", "", "model name to request (default: the first model the server lists)")
	fl.StringVar(&f.api, "api", "chat", "API to drive: chat, completions, embeddings or http")
	fl.StringVar(&f.apiKey, "api-key", "", "API key (default $OPENAI_API_KEY); never written anywhere")
	fl.Float64Var(&f.rate, "rate", 0, "open loop: requests per second")
	fl.IntVar(&f.concurrency, "concurrency", 0, "closed loop: number of concurrent workers")
	fl.IntVar(&f.maxConcurrency, "max-concurrency", 0, "open loop: cap on requests in flight (0: none)")
	fl.StringVar(&f.arrival, "arrival", "poisson", "open-loop arrivals: constant, poisson, gamma, or trace (replay the dataset's timestamps)")
	fl.Float64Var(&f.burstiness, "burstiness", 1, "gamma shape: 1 is Poisson, <1 burstier, >1 more regular")
	fl.Float64Var(&f.rampFrom, "ramp-from", 0, "open loop: ramp the rate linearly from this to --rate over warm-up and duration (constant or poisson)")
	fl.DurationVar(&f.duration, "duration", 0, "how long to send after warm-up (default 30s unless --requests)")
	fl.IntVar(&f.requests, "requests", 0, "how many requests to send after warm-up")
	fl.DurationVar(&f.warmup, "warmup", 0, "warm-up sent first and left out of the figures")
	fl.StringVar(&f.dataset, "dataset", "", "file of requests: spate JSONL ({\"prompt\"|\"messages\"|\"body\": ...} a line), ShareGPT, OpenAI batch or CSV")
	fl.StringVar(&f.datasetFormat, "dataset-format", "", "format of --dataset: jsonl, sharegpt, batch or csv (default: guessed from the file)")
	fl.StringVar(&f.workloadFile, "workload", "", "workload file (YAML): intents, shared prefixes, popularity, turns, images, checks (see examples/)")
	fl.Float64Var(&f.speed, "speed", 1, "with --arrival trace: replay the dataset's timestamps this many times faster")
	fl.BoolVar(&f.shaping, "complexity-shaping", false, "scale each open-loop gap by the request's complexity score: rate × 0.75^(score/20)")
	fl.StringVar(&f.inputTokens, "input-tokens", "256", "synthetic prompt length in tokens: N, MEAN:SD, uniform:LO:HI, lognormal:MEAN:SD, choice:4096@0.5,16384@0.5, empirical:FILE")
	fl.StringVar(&f.outputTokens, "output-tokens", "128", "output tokens to ask for (max_tokens), a distribution like --input-tokens; 0 for the server's default")
	fl.StringVar(&f.slo, "slo", "", "per-request objectives for goodput, e.g. ttft=500ms,tpot=50ms (keys ttft, tpot, itl, e2e)")
	fl.StringArrayVar(&f.thresholds, "threshold", nil, "pass/fail expression, e.g. 'p99(ttft) < 800ms' (repeatable; exit 3 if any fails)")
	fl.StringVar(&f.out, "out", "spate-results/result.json", "result file to write")
	fl.StringVar(&f.records, "records", "", "also write every request as a JSON line to this file")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the arrival schedule and the synthetic workload")
	fl.BoolVar(&f.stream, "stream", true, "ask for streamed responses (--stream=false for whole responses)")
	fl.StringVar(&f.ignoreEOS, "ignore-eos", "auto", "send ignore_eos so servers generate exactly max_tokens: auto (not to api.openai.com), true, false")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Minute, "timeout of one request")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", time.Minute, "fail a request whose response is silent this long")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", engine.DefaultDrainTimeout, "after the last send, how long to wait for requests in flight")
	fl.DurationVar(&f.lagBnd, "lag-bound", metrics.DefaultLagBound, "schedule-lag p99 above which the run is marked invalid")
	fl.StringVar(&f.tokenizerName, "tokenizer", "cl100k_base", "tokenizer of synthetic prompt lengths and local token counts: cl100k_base, o200k_base, llama3 or a tokenizer.json path")
	fl.IntVar(&f.tokenizerSample, "tokenizer-sample", 16, "count output tokens locally on every Nth request to check the server's usage (0: only when usage is missing)")
	fl.StringVar(&f.method, "method", "", "--api http: request method (default GET, or POST with a body)")
	fl.StringVar(&f.path, "path", "", "--api http: path appended to --target")
	fl.StringVar(&f.body, "body", "", "--api http: request body")
	fl.StringArrayVar(&f.headers, "header", nil, "extra request header 'Name: value' (repeatable)")
	fl.BoolVar(&f.noTraceHeader, "no-trace-header", false, "do not send a W3C traceparent header (sent by default; its ids are in --records)")
	fl.StringVar(&f.name, "name", "main", "scenario name in the result")
	fl.StringVar(&f.sutVersion, "sut-version", "", "version of the system under test, recorded in the result's provenance")
	fl.BoolVar(&f.quiet, "quiet", false, "print no progress and no summary")
	fl.BoolVar(&f.noSummary, "no-summary", false, "print progress but no summary (for wrappers that print their own)")
	_ = fl.MarkHidden("no-summary")
	fl.DurationVar(&f.progressEvery, "progress", 5*time.Second, "interval of progress lines on stderr (0: none)")
	for _, x := range f.exts {
		x.addFlags(fl)
	}
	return c
}

// plan turns flags into a runner.Plan, or a usage error.
func (f *runFlags) plan(cmd *cobra.Command) (runner.Plan, error) {
	var p runner.Plan
	if f.target == "" {
		return p, usageErr("--target is required, e.g. --target http://127.0.0.1:8000/v1")
	}
	if f.duration == 0 && f.requests == 0 && len(f.fileStages) == 0 && f.arrival != "trace" {
		f.duration = 30 * time.Second
	}
	if f.workloadFile != "" {
		w, err := experiment.LoadWorkload(f.workloadFile)
		if err != nil {
			return p, usageErr("--workload: %v", err)
		}
		w.Resolve(filepath.Dir(f.workloadFile))
		f.workloadSpec = *w
		if w.InputTokens != "" && !cmd.Flags().Changed("input-tokens") {
			f.inputTokens = w.InputTokens
		}
		if w.OutputTokens != "" && !cmd.Flags().Changed("output-tokens") {
			f.outputTokens = w.OutputTokens
		}
		if w.Dataset != "" && !cmd.Flags().Changed("dataset") {
			f.dataset = w.Dataset
		}
	}
	stages, err := f.stages(cmd)
	if err != nil {
		return p, err
	}
	switch f.api {
	case openai.Chat, openai.Completions, openai.Embeddings, "http":
	default:
		return p, usageErr("--api %q: use chat, completions, embeddings or http", f.api)
	}
	slo, err := metrics.ParseSLO(f.slo)
	if err != nil {
		return p, usageErr("--slo: %v", err)
	}
	for _, expr := range f.thresholds {
		t, err := threshold.Parse(expr)
		if err != nil {
			return p, usageErr("--threshold: %v", err)
		}
		p.Thresholds = append(p.Thresholds, t)
	}
	if err := runner.CheckThresholds(stages, p.Thresholds); err != nil {
		return p, usageErr("%v", err)
	}
	if err := runner.CheckAborts(f.aborts); err != nil {
		return p, usageErr("%v", err)
	}
	p.Aborts = f.aborts
	// The lengths are checked here, for a usage error naming the flag;
	// the workload spec below carries them.
	if _, err := workload.ParseLengths(f.inputTokens); err != nil {
		return p, usageErr("--input-tokens %v", err)
	}
	if _, err := workload.ParseLengths(f.outputTokens); err != nil {
		return p, usageErr("--output-tokens %v", err)
	}
	if f.apiKey == "" {
		f.apiKey = os.Getenv("OPENAI_API_KEY")
	}

	// The tokenizer lengths are in and local counts use.
	if f.tok, err = tokenizer.Load(f.tokenizerName); err != nil {
		return p, usageErr("--tokenizer: %v", err)
	}
	// Workload.
	spec := f.workloadSpec
	spec.InputTokens, spec.OutputTokens, spec.Dataset = f.inputTokens, f.outputTokens, f.dataset
	if f.datasetFormat != "" {
		spec.DatasetFormat = f.datasetFormat
	}
	if cmd.Flags().Changed("speed") || spec.Speed == 0 {
		spec.Speed = f.speed
	}
	if f.tok.Name() != "cl100k_base" && spec.Dataset == "" && f.api != "http" {
		if err := workload.CheckVocab(f.tok, f.tok.Name()); err != nil {
			return p, usageErr("--tokenizer: %v", err)
		}
	}
	src, offsets, err := f.source(spec)
	if err != nil {
		return p, err
	}
	for i := range stages {
		st := &stages[i]
		soffsets := offsets
		if w := f.stageWorkloads[st.Name]; w != nil {
			ssrc, soff, err := f.source(workload.Merge(spec, *w))
			if err != nil {
				return p, fmt.Errorf("stage %s: %w", st.Name, err)
			}
			st.Source, soffsets = workload.WithTemplates(ssrc, f.seed), soff
		}
		st.Shape = st.Shape || f.shaping
		if st.Arrival == "trace" {
			if soffsets == nil {
				return p, usageErr("stage %s: --arrival trace replays a dataset's timestamps: give a --dataset whose lines have \"timestamp\" (milliseconds)", st.Name)
			}
			st.Trace = &schedule.Trace{Offsets: soffsets}
			if st.Requests == 0 && st.Duration == 0 {
				st.Requests = len(soffsets)
			}
		}
	}

	// Protocol client; without --model, the first model the server lists.
	if f.model == "" && f.api != "http" {
		c, err := f.newClient(f.target)
		if err != nil {
			return p, err
		}
		ids, err := c.(*openai.Client).Models(cmd.Context())
		if err != nil {
			return p, fmt.Errorf("%w (or pass --model)", err)
		}
		if len(ids) == 0 {
			return p, errors.New("the server lists no models: pass --model")
		}
		f.model = ids[0]
	}
	if p.Client, err = f.newClient(f.target); err != nil {
		return p, err
	}
	tok := f.tok

	for i := range stages {
		stages[i].SLO, stages[i].LagBound = slo, f.lagBnd
		if fl := stages[i].Faults; fl != nil && strings.HasPrefix(fl.URL, "/") {
			// A path is on the target's host: scheme://host of --target.
			u, err := url.Parse(f.target)
			if err != nil {
				return p, usageErr("--target: %v", err)
			}
			resolved := *fl
			resolved.URL = u.Scheme + "://" + u.Host + fl.URL
			stages[i].Faults = &resolved
		}
	}
	p.Stages = stages
	p.Source = workload.WithTemplates(src, f.seed)
	p.Seed = f.seed
	p.Version = version
	p.Provenance = result.Provenance{Model: f.model, SUTVersion: f.sutVersion, Target: openai.Redact(f.target), API: f.api,
		Tokenizer: tok.Name(), ExperimentSHA256: f.experimentSHA256}
	st := stages[0]
	p.Config = result.Config{
		Arrival: st.Arrival, Rate: st.Rate, Concurrency: st.Concurrency, MaxConcurrency: st.MaxConcurrency,
		Requests: st.Requests, Dataset: f.dataset, Stream: f.stream, SLO: f.slo, Seed: f.seed, Thresholds: f.thresholds,
		InputTokens: f.inputTokens, OutputTokens: f.outputTokens, Experiment: f.experiment,
	}
	if st.Arrival == "gamma" {
		p.Config.Burstiness = st.Burstiness
	}
	if st.Duration > 0 {
		p.Config.Duration = st.Duration.String()
	}
	if st.Warmup > 0 {
		p.Config.Warmup = st.Warmup.String()
	}
	if f.dataset != "" {
		p.Config.InputTokens = ""
	}
	p.Config.Workload = f.workloadFile
	if !f.quiet && f.progressEvery > 0 {
		p.Progress, p.ProgressEvery = runner.ProgressLines(cmd.ErrOrStderr()), f.progressEvery
	}
	return p, nil
}

// source builds the workload from its spec: the fixed request of a plain
// HTTP run, or a dataset, intents or synthetic prompts with everything the
// spec adds; offsets are a timed dataset's send times.
func (f *runFlags) source(spec workload.Spec) (workload.Source, []time.Duration, error) {
	if f.api == "http" && spec.Dataset == "" {
		// A plain HTTP run sends --method, --path and --body every time;
		// --body may be a template.
		fixed := &workload.Fixed{Req: workload.Request{Method: strings.ToUpper(f.method), Path: f.path, Body: []byte(f.body)}}
		if payload.Has(f.body) {
			t, err := payload.Parse("--body", f.body)
			if err != nil {
				return nil, nil, usageErr("%v", err)
			}
			fixed.Req.BodyTemplate = t
		}
		return fixed, nil, nil
	}
	b, err := workload.Build(spec, workload.BuildOptions{Seed: f.seed, Tokenizer: f.tok})
	if err != nil {
		return nil, nil, &exitErr{code: exitError, err: fmt.Errorf("workload: %w", err)}
	}
	return b.Source, b.Offsets, nil
}

// newClient builds the protocol client of one target URL from the flags:
// --target's, or one more upstream's (--targets).
func (f *runFlags) newClient(target string) (engine.Client, error) {
	headers := http.Header{}
	for _, h := range f.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usageErr("--header %q: want 'Name: value'", h)
		}
		headers.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	switch f.api {
	case openai.Chat, openai.Completions, openai.Embeddings:
		ignore, err := ignoreEOS(f.ignoreEOS, target)
		if err != nil {
			return nil, err
		}
		c, err := openai.New(openai.Config{
			BaseURL: target, API: f.api, Model: f.model, APIKey: f.apiKey, Stream: f.stream,
			IgnoreEOS: ignore, Timeout: f.timeout, IdleTimeout: f.idleTimeout,
			Tokenizer: f.tok, TokenizerSample: f.tokenizerSample, Headers: headers, TraceHeader: !f.noTraceHeader,
		})
		if err != nil {
			return nil, usageErr("--target/--api %s: %v", openai.Redact(target), err)
		}
		return c, nil
	case "http":
		var body []byte
		if f.body != "" {
			body = []byte(f.body)
		}
		c, err := plainhttp.New(plainhttp.Config{
			BaseURL: target, Method: strings.ToUpper(f.method), Path: f.path, Body: body,
			Headers: headers, Timeout: f.timeout, TraceHeader: !f.noTraceHeader,
		})
		if err != nil {
			return nil, usageErr("--target %s: %v", openai.Redact(target), err)
		}
		return c, nil
	}
	return nil, usageErr("--api %q: use chat, completions, embeddings or http", f.api)
}

// ignoreEOS resolves --ignore-eos: auto sends it to every server but
// OpenAI's own API, which rejects the field.
func ignoreEOS(v, target string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "auto":
		u, err := url.Parse(target)
		return err == nil && !strings.HasSuffix(u.Hostname(), "openai.com"), nil
	}
	return false, usageErr("--ignore-eos %q: use auto, true or false", v)
}

func runRun(cmd *cobra.Command, f *runFlags) error {
	for _, x := range f.exts {
		cleanup, err := x.before(cmd, f)
		if err != nil {
			return err
		}
		if cleanup != nil {
			defer cleanup()
		}
	}
	p, err := f.plan(cmd)
	if err != nil {
		return err
	}
	for _, x := range f.exts {
		if err := x.after(cmd, f, &p); err != nil {
			return err
		}
	}
	var recFile *os.File
	if f.records != "" {
		recFile, err = os.Create(f.records)
		if err != nil {
			return fmt.Errorf("opening --records file: %w", err)
		}
		defer recFile.Close()
		p.Records = recFile
	}
	return execute1(cmd, p, f.out, f.quiet || f.noSummary, f.actions, f.experiment, func(res *result.Result) error {
		var errs []error
		for _, x := range f.exts {
			errs = append(errs, x.finish(cmd, f, res, f.out))
		}
		return errors.Join(errs...)
	})
}

// execute1 runs a plan, writes its result and summary, runs the gate
// actions its verdict maps to, and maps the outcome to an exit code.
// finish, when not nil, is called once the result is written.
func execute1(cmd *cobra.Command, p runner.Plan, out string, quiet bool, actions map[string][]gate.Action, experiment string, finish func(*result.Result) error) error {
	res, runErr := runner.Run(cmd.Context(), p)
	if res == nil {
		return runErr
	}
	if !quiet {
		if err := report.Console(cmd.OutOrStdout(), res); err != nil {
			return err
		}
	}
	write := func() error {
		if out == "" {
			return nil
		}
		return result.Write(out, res)
	}
	if err := write(); err != nil {
		return err
	}
	if !quiet && out != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "result written to %s\n", out)
	}
	oerr := outcomeErr(res, runErr)
	if finish != nil {
		// A failing output (a report that could not be written) is an
		// error, exit 1, but does not skip the gate's actions.
		if err := finish(res); err != nil {
			oerr = &exitErr{code: exitError, err: err}
		}
	}
	if len(actions) == 0 {
		return oerr
	}
	var ee *exitErr
	verdictErr := oerr
	if errors.As(oerr, &ee) && ee.code == exitThreshold {
		verdictErr = nil // failed thresholds are the fail verdict, not an error
	}
	verdict := gate.Verdict(res, verdictErr)
	outs := gate.Run(context.WithoutCancel(cmd.Context()), actions[verdict], gate.Payload{
		Verdict: verdict, Experiment: experiment, Fingerprint: res.Fingerprint, Result: out, Failed: gate.FailedThresholds(res),
	})
	res.Gate = &result.Gate{Verdict: verdict, Actions: []result.GateAction{}}
	failed := 0
	for _, o := range outs {
		res.Gate.Actions = append(res.Gate.Actions, result.GateAction{Action: o.Action, OK: o.OK, Error: o.Error, Output: o.Output, Seconds: o.Seconds})
		status := "ok"
		if !o.OK {
			status, failed = "FAILED: "+o.Error, failed+1
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "gate: verdict %s → %s %s (%.1f s)\n", verdict, o.Action, status, o.Seconds)
		if o.OK && o.Output != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "  %s\n", strings.ReplaceAll(o.Output, "\n", "\n  "))
		}
	}
	if err := write(); err != nil {
		return err
	}
	if oerr == nil && failed > 0 {
		return fmt.Errorf("%d gate action(s) failed on verdict %s: see gate.actions in the result", failed, verdict)
	}
	return oerr
}

// outcomeErr is the error, and so the exit code, a finished run ends with.
func outcomeErr(res *result.Result, runErr error) error {
	if runErr != nil {
		return runErr
	}
	if res.Interrupted {
		return errors.New("interrupted: partial result written")
	}
	ok, failed := 0, 0
	for _, sc := range res.Scenarios {
		ok += sc.Requests.Succeeded
		failed += sc.Requests.Failed
	}
	if ok == 0 && failed > 0 {
		return fmt.Errorf("no request succeeded (%d failed): see requests.errors in the result", failed)
	}
	if !res.ThresholdsPassed {
		return &exitErr{code: exitThreshold, err: errors.New("thresholds failed")}
	}
	return nil
}
