// Package plan turns an experiment into a run: Build is the one function
// from the model (experiment.Experiment, filled by a file, flags or Go) to
// a runner.Plan, with the features that wrap it (features.go, in one
// explicit order); Check runs every check a run makes before it sends; and
// Execute runs a built plan, writes its outputs and runs the gate's
// actions.
//
// It is the second stage of the data flow: experiment → plan → workload,
// schedule, engine, client → record → metrics → verdict → outputs. A
// setting goes downward only: a field of the experiment (--rate is
// experiment.Stage.Rate) → plan.Build → runner.Stage → the runner's pacer.
package plan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/client/plainhttp"
	"github.com/spate-dev/spate/internal/engine"
	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/schedule"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/internal/verdict"
	"github.com/spate-dev/spate/internal/verdict/threshold"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/internal/workload/payload"
	"github.com/spate-dev/spate/internal/workload/tokenizer"
	"github.com/spate-dev/spate/result"
)

// Env is what a run takes from its surroundings besides the experiment.
type Env struct {
	// Stdout receives the console summary, the features' tables and the
	// notes on files written; nil prints none.
	Stdout io.Writer
	// Stderr receives progress, warnings and the gate's actions; nil
	// prints none.
	Stderr io.Writer
	// Live redraws progress in place (an interactive terminal) instead of
	// printing a line each interval.
	Live bool
	// NoSummary leaves out the console summary and the features' tables
	// but keeps progress and the notes (for wrappers that print their own).
	NoSummary bool
	// Version is spate's version, recorded in the result.
	Version string
	// Hurry, once closed after the run's context is cancelled, stops the
	// drain at once (a second Ctrl-C): see engine.Config.Hurry.
	Hurry <-chan struct{}
}

// Run is a built run: the runner's plan, the settings it was built from
// (the experiment with its defaults, as the features changed it) and the
// features that act on it. Close releases what Build started.
type Run struct {
	// Plan is what the runner runs.
	Plan runner.Plan
	// X is the experiment with every default filled in; features may change
	// it before the plan is built (the chaos proxy takes the target's place).
	X   *experiment.Experiment
	env Env
	tok tokenizer.Counter
	// vocab makes synthetic prompts in the server's tokens (--tokenizer
	// server); nil otherwise.
	vocab *workload.Vocab
	// red is the run's redaction (redact.go).
	red *scrub.Redactor
	// features are this run's instances of the features, in order.
	features []feature
	closers  []func()
	// vectorUpstream is the vector database behind the chaos proxy, when
	// --vector-proxy put one in front of it (x.Vector.URL is the proxy).
	vectorUpstream string
}

// ErrInvalid marks an experiment that cannot run as given (a usage error:
// spate exits 2). Test for it with errors.Is.
var ErrInvalid = errors.New("invalid experiment")

// ErrThresholdsFailed is the outcome of a run whose thresholds failed; the
// result is complete and written (spate exits 3).
var ErrThresholdsFailed = verdict.ErrThresholdsFailed

// ErrUntrustworthy is the outcome of a run whose thresholds passed but
// whose measurement was invalid; the result is complete and written
// (spate exits 4, or 0 with measurement.allowInvalid).
var ErrUntrustworthy = verdict.ErrUntrustworthy

// DefaultIdleTimeout is the default stall limit of a streamed response.
// It is shorter than the default drain (engine.DefaultDrainTimeout), so
// that a stream that stalls before sending ends is a timeout error of its
// own, not a request cancelled when the drain runs out.
const DefaultIdleTimeout = 20 * time.Second

// ErrNoneSucceeded is the outcome of a run with a stage in which no
// request succeeded, whatever the reason (errors, requests cancelled at
// the end of the drain, nothing sent): the result is written, but its
// figures measure nothing (spate exits 1).
var ErrNoneSucceeded = errors.New("no request succeeded")

// invalidError is an ErrInvalid with its own message.
type invalidError struct{ err error }

func (e *invalidError) Error() string        { return e.err.Error() }
func (e *invalidError) Unwrap() error        { return e.err }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

// invalidf returns an ErrInvalid that says what is wrong.
func invalidf(format string, a ...any) error {
	return &invalidError{fmt.Errorf(format, a...)}
}

// Invalid marks err as an ErrInvalid, keeping its message (nil stays nil).
func Invalid(err error) error {
	if err == nil || errors.Is(err, ErrInvalid) {
		return err
	}
	return &invalidError{err}
}

// The values of measurement.sloFrom.
const (
	SLOFromIntended = "intended"
	SLOFromSent     = "sent"
)

// Defaults returns an experiment holding the default of every setting that
// has one, with one stage ("main") holding the stage defaults: what a zero
// field of an experiment means.
func Defaults() *experiment.Experiment {
	seed := uint64(1)
	return &experiment.Experiment{
		Target: experiment.Target{
			API: openai.Chat, IgnoreEOS: "auto", Timeout: 10 * time.Minute, IdleTimeout: DefaultIdleTimeout,
			Stream: new(true), TraceHeader: new(true),
			Policy: "round-robin", RetryBackoff: defaultBackoff, RetryBudget: defaultBudget,
		},
		Workload: experiment.Workload{InputTokens: "256", OutputTokens: "128", Speed: 1, Seed: &seed},
		Stages:   []experiment.Stage{{Name: "main", Arrival: "poisson", Burstiness: 1, DrainTimeout: engine.DefaultDrainTimeout}},
		Measurement: experiment.Measurement{
			LagBound: metrics.DefaultLagBound, TokenizerSample: new(16), Tokenizer: "cl100k_base", SLOFrom: SLOFromIntended,
		},
		Outputs:    experiment.Outputs{Progress: new(5 * time.Second)},
		Observe:    observeDefaults(),
		Chaos:      chaosDefaults(),
		Probes:     experiment.Probes{Fraction: 0.1},
		Vector:     vectorDefaults(),
		Resilience: resilienceDefaults(),
		Shard:      experiment.Shard{StartLateMax: 10 * time.Second, ClockCheck: new(true)},
		Limits:     limitDefaults(),
	}
}

// withDefaults returns a copy of e with every zero setting that has a
// default set to it (Defaults), and the API key resolved from the
// environment when e does not give one.
func withDefaults(e *experiment.Experiment) *experiment.Experiment {
	d := Defaults()
	x := *e
	or := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	dur := func(dst *time.Duration, v time.Duration) {
		if *dst == 0 {
			*dst = v
		}
	}
	t := &x.Target
	or(&t.API, d.Target.API)
	or(&t.IgnoreEOS, d.Target.IgnoreEOS)
	dur(&t.Timeout, d.Target.Timeout)
	dur(&t.IdleTimeout, d.Target.IdleTimeout)
	or(&t.Policy, d.Target.Policy)
	dur(&t.RetryBackoff, d.Target.RetryBackoff)
	if t.RetryBudget == 0 {
		t.RetryBudget = d.Target.RetryBudget
	}
	if t.Stream == nil {
		t.Stream = d.Target.Stream
	}
	if t.TraceHeader == nil {
		t.TraceHeader = d.Target.TraceHeader
	}
	if t.APIKey == "" && t.APIKeyEnv != "" {
		t.APIKey = os.Getenv(t.APIKeyEnv)
	}
	if t.APIKey == "" {
		t.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	w := &x.Workload
	or(&w.InputTokens, d.Workload.InputTokens)
	or(&w.OutputTokens, d.Workload.OutputTokens)
	if w.Speed == 0 {
		w.Speed = d.Workload.Speed
	}
	if w.Seed == nil {
		w.Seed = d.Workload.Seed
	}
	if t.API == openai.Rerank || t.API == openai.Score {
		// Ranking is not streamed, and every request has documents.
		t.Stream = new(false)
		if w.Documents == nil {
			w.Documents = &experiment.Documents{}
		}
	}
	x.Stages = append([]experiment.Stage(nil), e.Stages...)
	for i := range x.Stages {
		s, ds := &x.Stages[i], d.Stages[0]
		if s.Concurrency <= 0 {
			or(&s.Arrival, ds.Arrival)
		}
		if s.Burstiness == 0 {
			s.Burstiness = ds.Burstiness
		}
		dur(&s.DrainTimeout, ds.DrainTimeout)
	}
	m := &x.Measurement
	dur(&m.LagBound, d.Measurement.LagBound)
	if m.TokenizerSample == nil {
		m.TokenizerSample = d.Measurement.TokenizerSample
	}
	or(&m.Tokenizer, d.Measurement.Tokenizer)
	or(&m.SLOFrom, d.Measurement.SLOFrom)
	if x.Outputs.Progress == nil {
		x.Outputs.Progress = d.Outputs.Progress
	}
	o := &x.Observe
	dur(&o.ScrapeInterval, d.Observe.ScrapeInterval)
	or(&o.OTLPProtocol, d.Observe.OTLPProtocol)
	dur(&o.OTLPInterval, d.Observe.OTLPInterval)
	dur(&x.Chaos.TMax, d.Chaos.TMax)
	dur(&x.Chaos.RecoveryBin, d.Chaos.RecoveryBin)
	if x.Probes.Fraction == 0 {
		x.Probes.Fraction = d.Probes.Fraction
	}
	v := &x.Vector
	or(&v.Dataset, d.Vector.Dataset)
	or(&v.Metric, d.Vector.Metric)
	if v.K == 0 {
		v.K = d.Vector.K
	}
	if v.Load == nil {
		v.Load = d.Vector.Load
	}
	r := &x.Resilience
	if r.Enabled == nil {
		r.Enabled = d.Resilience.Enabled
	}
	dur(&r.Window, d.Resilience.Window)
	dur(&r.RecoveryWindow, d.Resilience.RecoveryWindow)
	x.Limits = x.Limits.Or(d.Limits)
	sh := &x.Shard
	dur(&sh.StartLateMax, d.Shard.StartLateMax)
	if sh.ClockCheck == nil {
		sh.ClockCheck = d.Shard.ClockCheck
	}
	return &x
}

// Build turns an experiment into a run: it checks it (Check), lets each
// feature start what it needs (a chaos proxy, exporters), builds the
// runner's plan from the experiment's fields (stages, thresholds,
// workload, protocol client, provenance) and lets each feature add to it.
// The caller must Close the run.
func Build(ctx context.Context, e *experiment.Experiment, env Env) (_ *Run, err error) {
	red := redactor(e)
	defer func() { err = red.Error(err) }()
	if err := CheckContext(ctx, e); err != nil {
		return nil, err
	}
	r := &Run{X: withDefaults(e), env: redactEnv(env, red), features: features(), red: red}
	r.Plan.Redact = red.String
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if err := checkOutputs(ctx, r.X); err != nil {
		return nil, err
	}
	for _, f := range r.features {
		if err := f.start(ctx, r); err != nil {
			return nil, err
		}
	}
	if r.X.Target.URL == "" {
		return nil, invalidf("--target is required, e.g. --target http://127.0.0.1:8000/v1")
	}
	if err := r.build(ctx); err != nil {
		return nil, err
	}
	for _, f := range r.features {
		if err := f.apply(ctx, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Close releases what the run started, last first; it may be called again.
func (r *Run) Close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
	r.closers = nil
}

// onClose adds f to what Close calls.
func (r *Run) onClose(f func()) { r.closers = append(r.closers, f) }

// stdout and stderr are the env's writers, or io.Discard.
func (r *Run) stdout() io.Writer { return orDiscard(r.env.Stdout) }
func (r *Run) stderr() io.Writer { return orDiscard(r.env.Stderr) }

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// quiet reports whether nothing but errors is printed; summary whether
// the console summary and the features' tables are.
func (r *Run) quiet() bool   { return r.X.Outputs.Quiet }
func (r *Run) summary() bool { return !r.X.Outputs.Quiet && !r.env.NoSummary }

// seed is the run's seed.
func (r *Run) seed() uint64 { return *r.X.Workload.Seed }

// build makes the runner's plan from r.X.
func (r *Run) build(ctx context.Context) error {
	x := r.X
	p := &r.Plan
	stages, err := runStages(x)
	if err != nil {
		return err
	}
	slo, _ := metrics.ParseSLO(sloString(x.SLO)) // checked
	var exprs []string
	for _, spec := range x.Thresholds {
		if threshold.IsTrigger(spec.Expr) {
			tr, _ := threshold.ParseTrigger(spec.Expr) // checked
			p.Triggers = append(p.Triggers, runner.Trigger{Trigger: tr, AbortOnFail: spec.AbortOnFail, Delay: spec.Delay, Window: spec.Window})
			exprs = append(exprs, spec.Expr)
			continue
		}
		t, _ := threshold.Parse(spec.Expr) // checked
		p.Thresholds = append(p.Thresholds, t)
		exprs = append(exprs, spec.Expr)
		if spec.AbortOnFail {
			p.Aborts = append(p.Aborts, runner.Abort{Threshold: t, Delay: spec.Delay, Window: spec.Window})
		}
	}
	if err := runner.CheckThresholds(stages, p.Thresholds, x.Measurement.SLOFrom == SLOFromSent); err != nil {
		return invalidf("%v", err)
	}
	if r.tok, r.vocab, err = r.loadTokenizer(ctx); err != nil {
		return err
	}
	spec := x.Workload
	src, offsets, err := r.source(ctx, spec, nil)
	if err != nil {
		return err
	}
	for i := range stages {
		st := &stages[i]
		soffsets := offsets
		var burst *schedule.Stampede
		if x.Stages[i].Stampede != "" {
			// Bursts on top of the stage's own arrivals; its workload knows
			// which requests are a burst's.
			spec, _ := schedule.ParseStampede(x.Stages[i].Stampede) // checked
			base, err := runner.StagePacer(*st, r.seed(), src)
			if err != nil {
				return invalidf("stage %s: %v", st.Name, err)
			}
			burst = &schedule.Stampede{Base: base, Spec: spec}
			st.Pacer = burst
		}
		if w := x.Stages[i].Workload; w != nil || burst != nil {
			sspec := spec
			if w != nil {
				sspec = spec.Merge(*w)
			}
			ssrc, soff, err := r.source(ctx, sspec, burst)
			if err != nil {
				return fmt.Errorf("stage %s: %w", st.Name, err)
			}
			st.Source, soffsets = workload.WithTemplates(ssrc, r.seed()), soff
		}
		if st.Arrival == "trace" {
			if soffsets == nil {
				return invalidf("stage %s: --arrival trace replays a dataset's timestamps: give a --dataset whose lines have \"timestamp\" (milliseconds)", st.Name)
			}
			st.Trace = &schedule.Trace{Offsets: soffsets}
			if st.Requests == 0 && st.Duration == 0 {
				st.Requests = len(soffsets)
			}
		}
	}
	// Without a model, the first model the server lists.
	if x.Target.Model == "" && x.Target.API != "http" {
		c, err := r.newClient(x.Target.URL)
		if err != nil {
			return err
		}
		ids, err := c.(*openai.Client).Models(ctx)
		if errors.Is(err, openai.ErrTargetWithoutV1) || errors.Is(err, openai.ErrUnreachable) {
			return err // --model would not help: every request would 404, or reach nothing
		}
		if err != nil {
			return fmt.Errorf("%w (or pass --model)", err)
		}
		if len(ids) == 0 {
			return errors.New("the server lists no models: pass --model")
		}
		x.Target.Model = ids[0]
	}
	if p.Client, err = r.newClient(x.Target.URL); err != nil {
		return err
	}
	for i := range stages {
		stages[i].SLO, stages[i].LagBound = slo, x.Measurement.LagBound
		if fl := stages[i].Faults; fl != nil && strings.HasPrefix(fl.URL, "/") {
			// A path is on the target's host: scheme://host of the target.
			u, err := url.Parse(x.Target.URL)
			if err != nil {
				return invalidf("--target: %v", err)
			}
			resolved := *fl
			resolved.URL = u.Scheme + "://" + u.Host + fl.URL
			stages[i].Faults = &resolved
		}
	}
	p.Stages = stages
	p.SLOFromSent = x.Measurement.SLOFrom == SLOFromSent
	p.Hurry = r.env.Hurry
	p.Source = workload.WithTemplates(src, r.seed())
	// The same prompts sent to another API, or streamed or not, measure
	// something else: a different fingerprint.
	p.Defines = append(p.Defines, "api="+x.Target.API, fmt.Sprintf("stream=%t", *x.Target.Stream))
	// So do the same prompts asked for logprobs or forced past their end,
	// and stages that ask the first stage's prompts again: each is in the
	// digest when set (unset, the digests of earlier runs stand).
	if x.Target.Logprobs > 0 {
		p.Defines = append(p.Defines, fmt.Sprintf("logprobs=%d", x.Target.Logprobs))
	}
	if v := x.Target.IgnoreEOS; v != "" && v != "auto" {
		p.Defines = append(p.Defines, "ignore_eos="+v)
	}
	if x.Workload.ReuseAcrossStages {
		p.Defines = append(p.Defines, "stages=reuse")
	}
	p.Seed = r.seed()
	p.ReuseAcrossStages = x.Workload.ReuseAcrossStages
	p.Version = r.env.Version
	p.Provenance = result.Provenance{Model: x.Target.Model, SUTVersion: x.SUT.Version, Target: scrub.URL(x.Target.URL),
		API: x.Target.API, Tokenizer: r.tok.Name(), ExperimentSHA256: x.SHA256}
	if p.Provenance.WorkloadSpecSHA256, err = workloadSpecDigest(x); err != nil {
		return err
	}
	st := stages[0]
	p.Config = result.Config{
		Arrival: st.Arrival, Rate: st.Rate, Concurrency: st.Concurrency, MaxConcurrency: st.MaxConcurrency,
		Requests: st.Requests, Dataset: spec.Dataset, Stream: *x.Target.Stream, SLO: sloString(x.SLO), Seed: r.seed(),
		Thresholds: exprs, InputTokens: spec.InputTokens, OutputTokens: spec.OutputTokens, Experiment: x.Path,
		Workload: x.WorkloadFile, ComplexityShaping: st.Shape, SLOFrom: x.Measurement.SLOFrom,
		AllowInvalid: x.Measurement.AllowInvalid,
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
	if spec.Dataset != "" {
		p.Config.InputTokens = ""
	}
	if !r.quiet() && *x.Outputs.Progress > 0 && r.env.Stderr != nil {
		p.Progress, p.ProgressEvery = runner.ProgressLines(r.env.Stderr), *x.Outputs.Progress
	}
	return nil
}

// runStages turns the experiment's stages into the runner's.
func runStages(x *experiment.Experiment) ([]runner.Stage, error) {
	var stages []runner.Stage
	for _, s := range x.Stages {
		st := runner.Stage{
			Name: s.Name, Arrival: s.Arrival, Rate: s.Rate, Burstiness: s.Burstiness, RampFrom: s.RampFrom,
			Concurrency: s.Concurrency, MaxConcurrency: s.MaxConcurrency, Duration: s.Duration,
			Requests: s.Requests, Warmup: s.Warmup, DrainTimeout: s.DrainTimeout, Shape: s.ComplexityShaping,
			TokenRate: s.TokenRate, OutputBasis: s.TokenRateBasis == "output",
		}
		if s.Concurrency > 0 {
			st.Arrival = ""
		}
		if s.Faults != nil {
			st.Faults = &runner.Faults{URL: s.Faults.URL, Set: s.Faults.Set}
		}
		stages = append(stages, st)
	}
	return stages, nil
}

// sloString writes an SLO map as --slo takes it, keys sorted.
func sloString(m map[string]time.Duration) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// source builds the workload from its spec: the fixed request of a plain
// HTTP run, or a dataset, intents or synthetic prompts with everything the
// spec adds (and the keys of burst's stampedes, when not nil); offsets are
// a timed dataset's send times.
func (r *Run) source(ctx context.Context, spec experiment.Workload, burst *schedule.Stampede) (workload.Source, []time.Duration, error) {
	t := r.X.Target
	if t.API == "http" && spec.Dataset == "" {
		// A plain HTTP run sends the target's method, path and body every
		// time; the body may be a template.
		fixed := &workload.Fixed{Req: workload.Request{Method: strings.ToUpper(t.Method), Path: t.Path, Body: []byte(t.Body)}}
		if payload.Has(t.Body) {
			tmpl, err := payload.Parse("--body", t.Body)
			if err != nil {
				return nil, nil, invalidf("%v", err)
			}
			fixed.Req.BodyTemplate = tmpl
		}
		return fixed, nil, nil
	}
	o := workload.BuildOptions{Seed: r.seed(), Tokenizer: r.tok, Limits: workloadLimits(r.X.Limits), Context: ctx, Vocab: r.vocab}
	if burst != nil {
		o.Burst, o.BurstKeys = burst.Burst, burst.Spec.Keys
	}
	b, err := workload.Build(spec, o)
	if err != nil {
		return nil, nil, fmt.Errorf("workload: %w", err)
	}
	return b.Source, b.Offsets, nil
}

// Benchmark knobs, read from the environment when a client is built
// (docs/benchmarks.md): the paths the reactor (package rawhttp) replaced,
// for side-by-side figures, and the reactor's tick.
const (
	// envNetHTTP set reads OpenAI-style responses with net/http instead
	// of the reactor (openai.Config.NetHTTP).
	envNetHTTP = "SPATE_NETHTTP"
	// envFastHTTP set sends plain HTTP requests with fasthttp instead of
	// the reactor (plainhttp.Config.FastHTTP).
	envFastHTTP = "SPATE_FASTHTTP"
	// envReactorTick is the reactor's tick, a duration (negative: none;
	// unset: rawhttp.DefaultTick).
	envReactorTick = "SPATE_REACTOR_TICK"
)

// reactorTick reads envReactorTick: 0 (the default) when unset or not a
// duration.
func reactorTick() time.Duration {
	d, _ := time.ParseDuration(os.Getenv(envReactorTick))
	return d
}

// newClient builds the protocol client of one target URL: the target's,
// or one more upstream's (target.urls). The run closes it (Close).
func (r *Run) newClient(target string) (engine.Client, error) {
	t := r.X.Target
	headers := http.Header{}
	keys := make([]string, 0, len(t.Headers))
	for k := range t.Headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		headers.Add(strings.TrimSpace(k), strings.TrimSpace(t.Headers[k]))
	}
	switch t.API {
	case openai.Chat, openai.Completions, openai.Responses, openai.Embeddings, openai.Rerank, openai.Score:
		c, err := openai.New(openai.Config{
			BaseURL: target, API: t.API, Model: t.Model, APIKey: t.APIKey, Stream: *t.Stream,
			IgnoreEOS: ignoreEOS(t.IgnoreEOS, target), Timeout: t.Timeout, IdleTimeout: t.IdleTimeout,
			Tokenizer: r.tok, TokenizerSample: *r.X.Measurement.TokenizerSample, Headers: headers, TraceHeader: *t.TraceHeader,
			NetHTTP: os.Getenv(envNetHTTP) != "", ReactorTick: reactorTick(), Logprobs: t.Logprobs,
			MaxText: int64(r.X.Limits.ResponseText), MaxBody: int64(r.X.Limits.ResponseBody),
			MaxModelID: int64(r.X.Limits.ModelID), MaxModelList: int64(r.X.Limits.ModelList),
		})
		if err != nil {
			return nil, invalidf("--target/--api %s: %v", scrub.URL(target), err)
		}
		r.onClose(func() { _ = c.Close() }) // stops its reactor (package rawhttp)
		return c, nil
	case "http":
		var body []byte
		if t.Body != "" {
			body = []byte(t.Body)
		}
		c, err := plainhttp.New(plainhttp.Config{
			BaseURL: target, Method: strings.ToUpper(t.Method), Path: t.Path, Body: body,
			Headers: headers, Timeout: t.Timeout, TraceHeader: *t.TraceHeader,
			FastHTTP: os.Getenv(envFastHTTP) != "", ReactorTick: reactorTick(),
		})
		if err != nil {
			return nil, invalidf("--target %s: %v", scrub.URL(target), err)
		}
		r.onClose(func() { _ = c.Close() })
		return c, nil
	}
	return nil, invalidf("--api %q: use chat, completions, responses, embeddings, rerank, score or http", t.API)
}

// ignoreEOS resolves target.ignoreEOS (checked): auto sends it to every
// server but OpenAI's own API, which rejects the field.
func ignoreEOS(v, target string) bool {
	switch v {
	case "true":
		return true
	case "false":
		return false
	}
	u, err := url.Parse(target)
	return err == nil && !strings.HasSuffix(u.Hostname(), "openai.com")
}
