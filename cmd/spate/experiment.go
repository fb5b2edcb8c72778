package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/verdict/threshold"
)

// applyExperiment loads an experiment file into f: every setting whose flag
// was not given on the command line comes from the file.
func (f *runFlags) applyExperiment(cmd *cobra.Command, path string) error {
	e, err := experiment.Load(path)
	if err != nil {
		return &exitErr{code: exitUsage, err: err}
	}
	set := func(flag string, apply func()) {
		if !cmd.Flags().Changed(flag) {
			apply()
		}
	}
	t := e.Target
	str := func(flag string, dst *string, v string) {
		if v != "" {
			set(flag, func() { *dst = v })
		}
	}
	dur := func(flag string, dst *time.Duration, v time.Duration) {
		if v != 0 {
			set(flag, func() { *dst = v })
		}
	}
	str("target", &f.target, t.URL)
	str("api", &f.api, t.API)
	str("model", &f.model, t.Model)
	str("ignore-eos", &f.ignoreEOS, t.IgnoreEOS)
	str("method", &f.method, t.Method)
	str("path", &f.path, t.Path)
	str("body", &f.body, t.Body)
	str("sut-version", &f.sutVersion, e.SUT.Version)
	str("input-tokens", &f.inputTokens, e.Workload.InputTokens)
	str("output-tokens", &f.outputTokens, e.Workload.OutputTokens)
	// Files an experiment names are relative to the experiment file.
	dir := filepath.Dir(path)
	e.Workload.Resolve(dir)
	for i := range e.Stages {
		if w := e.Stages[i].Workload; w != nil {
			w.Resolve(dir)
		}
	}
	str("dataset", &f.dataset, e.Workload.Dataset)
	f.workloadSpec = e.Workload
	str("out", &f.out, e.Outputs.Result)
	str("records", &f.records, e.Outputs.Records)
	dur("timeout", &f.timeout, t.Timeout)
	dur("lag-bound", &f.lagBnd, e.Measurement.LagBound)
	dur("progress", &f.progressEvery, e.Outputs.Progress)
	str("tokenizer", &f.tokenizerName, e.Measurement.Tokenizer)
	if e.Measurement.TokenizerSample != nil {
		set("tokenizer-sample", func() { f.tokenizerSample = *e.Measurement.TokenizerSample })
	}
	if e.Outputs.Quiet {
		set("quiet", func() { f.quiet = true })
	}
	dur("idle-timeout", &f.idleTimeout, t.IdleTimeout)
	if t.Stream != nil {
		set("stream", func() { f.stream = *t.Stream })
	}
	if e.Workload.Seed != nil {
		set("seed", func() { f.seed = *e.Workload.Seed })
	}
	if t.APIKeyEnv != "" {
		set("api-key", func() { f.apiKey = os.Getenv(t.APIKeyEnv) })
	}
	var headers []string
	for k, v := range t.Headers {
		headers = append(headers, k+": "+v)
	}
	sort.Strings(headers)
	f.headers = append(headers, f.headers...) // command-line headers come last and win
	if len(e.SLO) > 0 {
		var slo []string
		for k, v := range e.SLO {
			slo = append(slo, k+"="+v.String())
		}
		sort.Strings(slo)
		set("slo", func() { f.slo = strings.Join(slo, ",") })
	}
	var fileThresholds []string
	for _, spec := range e.Thresholds {
		// An abortOnFail threshold is also judged at the end, like any other.
		fileThresholds = append(fileThresholds, spec.Expr)
		if spec.AbortOnFail {
			t, err := threshold.Parse(spec.Expr)
			if err != nil {
				return &exitErr{code: exitUsage, err: err}
			}
			f.aborts = append(f.aborts, runner.Abort{Threshold: t, Delay: spec.Delay, Window: spec.Window})
		}
	}
	f.thresholds = append(fileThresholds, f.thresholds...)
	for _, s := range e.Stages {
		if s.Workload != nil {
			if f.stageWorkloads == nil {
				f.stageWorkloads = map[string]*experiment.Workload{}
			}
			f.stageWorkloads[s.Name] = s.Workload
		}
		var faults *runner.Faults
		if s.Faults != nil {
			faults = &runner.Faults{URL: s.Faults.URL, Set: s.Faults.Set}
		}
		f.fileStages = append(f.fileStages, runner.Stage{Faults: faults,
			Name: s.Name, Arrival: s.Arrival, Rate: s.Rate, Burstiness: s.Burstiness, RampFrom: s.RampFrom,
			Concurrency: s.Concurrency, MaxConcurrency: s.MaxConcurrency, Duration: s.Duration,
			Requests: s.Requests, Warmup: s.Warmup, DrainTimeout: s.DrainTimeout, Shape: s.ComplexityShaping,
		})
	}
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	e.Workflow = rel(e.Workflow)
	if !strings.HasPrefix(e.Vector.Dataset, "gen:") {
		e.Vector.Dataset = rel(e.Vector.Dataset)
	}
	if err := extensionFlags(cmd, e); err != nil {
		return err
	}
	f.experiment, f.experimentSHA256, f.actions = path, e.SHA256, e.Actions
	return nil
}

// extensionFlags applies the experiment sections that features wire as
// flags of spate run (outputs, observe, chaos, probes, upstreams): a value
// in the file sets its flag unless the command line gave it.
func extensionFlags(cmd *cobra.Command, e *experiment.Experiment) error {
	var errs []string
	set := func(flag string, vals ...string) {
		fl := cmd.Flags().Lookup(flag)
		if fl == nil {
			errs = append(errs, "--"+flag+" is not in this build of spate")
			return
		}
		if fl.Changed {
			return
		}
		for _, v := range vals {
			if err := cmd.Flags().Set(flag, v); err != nil {
				errs = append(errs, fmt.Sprintf("--%s %q: %v", flag, v, err))
			}
		}
	}
	str := func(flag, v string) {
		if v != "" {
			set(flag, v)
		}
	}
	list := func(flag string, vs []string) {
		if len(vs) > 0 {
			set(flag, vs...)
		}
	}
	dur := func(flag string, d time.Duration) {
		if d != 0 {
			set(flag, d.String())
		}
	}
	boolean := func(flag string, b bool) {
		if b {
			set(flag, "true")
		}
	}
	o := e.Outputs
	str("report", o.Report)
	str("report-md", o.Markdown)
	str("junit", o.JUnit)
	str("series-csv", o.SeriesCSV)
	ob := e.Observe
	list("scrape", ob.Scrape)
	dur("scrape-interval", ob.ScrapeInterval)
	list("scrape-metric", ob.ScrapeMetrics)
	str("metrics-addr", ob.MetricsAddr)
	str("otlp-endpoint", ob.OTLPEndpoint)
	str("otlp-protocol", ob.OTLPProtocol)
	boolean("otlp-traces", ob.OTLPTraces)
	c := e.Chaos
	boolean("chaos-proxy", c.Proxy)
	list("chaos", c.Rules)
	str("request-chaos", c.Requests)
	t := e.Target
	if len(t.URLs) > 0 {
		set("targets", strings.Join(t.URLs, ","))
	}
	str("policy", t.Policy)
	if t.Retries > 0 {
		set("retries", fmt.Sprint(t.Retries))
	}
	dur("retry-backoff", t.RetryBackoff)
	if t.RetryBudget > 0 {
		set("retry-budget", fmt.Sprint(t.RetryBudget))
	}
	if len(e.Probes.Suites) > 0 {
		set("probes", strings.Join(e.Probes.Suites, ","))
	}
	if e.Probes.Fraction > 0 {
		set("probe-fraction", fmt.Sprint(e.Probes.Fraction))
	}
	v := e.Vector
	str("vector", v.URL)
	str("vector-dataset", v.Dataset)
	str("vector-metric", v.Metric)
	if v.K > 0 {
		set("vector-k", fmt.Sprint(v.K))
	}
	if len(v.EfSearch) > 0 {
		var efs []string
		for _, ef := range v.EfSearch {
			efs = append(efs, fmt.Sprint(ef))
		}
		set("ef-search", strings.Join(efs, ","))
	}
	if v.Load != nil {
		set("vector-load", fmt.Sprint(*v.Load))
	}
	str("workflow", e.Workflow)
	if len(errs) > 0 {
		return usageErr("experiment: %s", strings.Join(errs, "; "))
	}
	return nil
}

// stages returns the run's stages: the experiment's, with the load flags
// given on the command line applied to each, or one stage from the flags.
func (f *runFlags) stages(cmd *cobra.Command) ([]runner.Stage, error) {
	changed := cmd.Flags().Changed
	stages := f.fileStages
	if len(stages) == 0 {
		stages = []runner.Stage{{Name: f.name, Arrival: f.arrival, Rate: f.rate, Burstiness: f.burstiness, RampFrom: f.rampFrom,
			Concurrency: f.concurrency, MaxConcurrency: f.maxConcurrency, Duration: f.duration,
			Requests: f.requests, Warmup: f.warmup, DrainTimeout: f.drainTimeout}}
	} else {
		stages = append([]runner.Stage(nil), stages...)
		for i := range stages {
			s := &stages[i]
			if changed("rate") {
				s.Rate, s.Concurrency = f.rate, 0
			}
			if changed("concurrency") {
				s.Concurrency, s.Rate, s.MaxConcurrency = f.concurrency, 0, 0
			}
			if changed("arrival") || s.Arrival == "" {
				s.Arrival = f.arrival
			}
			if changed("burstiness") || s.Burstiness == 0 {
				s.Burstiness = f.burstiness
			}
			if changed("ramp-from") {
				s.RampFrom = f.rampFrom
			}
			if changed("max-concurrency") {
				s.MaxConcurrency = f.maxConcurrency
			}
			if changed("duration") {
				s.Duration = f.duration
			}
			if changed("requests") {
				s.Requests = f.requests
			}
			if changed("warmup") {
				s.Warmup = f.warmup
			}
			if changed("drain-timeout") || s.DrainTimeout == 0 {
				s.DrainTimeout = f.drainTimeout
			}
		}
	}
	for i := range stages {
		s := &stages[i]
		where := ""
		if len(f.fileStages) > 0 {
			where = fmt.Sprintf("stage %q: ", s.Name)
		}
		trace := s.Arrival == "trace"
		switch {
		case trace && (s.Rate > 0 || s.Concurrency > 0):
			return nil, usageErr("%s--arrival trace replays the dataset's timestamps: give no --rate or --concurrency", where)
		case trace:
		case (s.Rate > 0) == (s.Concurrency > 0):
			return nil, usageErr("%sgive exactly one of --rate R (open loop) or --concurrency N (closed loop)", where)
		case s.Rate < 0 || s.Concurrency < 0 || s.MaxConcurrency < 0 || s.Requests < 0:
			return nil, usageErr("%s--rate, --concurrency, --max-concurrency and --requests must not be negative", where)
		case s.MaxConcurrency > 0 && s.Concurrency > 0:
			return nil, usageErr("%s--max-concurrency caps an open-loop --rate run; with --concurrency it has no meaning", where)
		case s.Duration < 0 || s.Warmup < 0:
			return nil, usageErr("%s--duration and --warmup must not be negative", where)
		case s.Duration == 0 && s.Requests == 0 && !trace:
			return nil, usageErr("%sgive a duration or a number of requests", where)
		}
		if s.Concurrency > 0 {
			s.Arrival = ""
		}
		if err := runner.CheckStage(*s); err != nil {
			return nil, usageErr("%s--arrival/--rate/--burstiness/--ramp-from: %v", where, err)
		}
	}
	return stages, nil
}

func newSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of experiment files, for editors",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(experiment.Schema())
			return err
		},
	}
}

func newInitCmd() *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write a commented starter experiment file (default experiment.yaml)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "experiment.yaml"
			if len(args) == 1 {
				path = args[0]
			}
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			fh, err := os.OpenFile(path, flags, 0o644)
			if err != nil {
				if os.IsExist(err) {
					return &exitErr{code: exitError, err: fmt.Errorf("%s exists: pass --force to overwrite it", path)}
				}
				return fmt.Errorf("writing %s: %w", path, err)
			}
			if _, err := fh.Write(experiment.Starter()); err != nil {
				fh.Close()
				return fmt.Errorf("writing %s: %w", path, err)
			}
			if err := fh.Close(); err != nil {
				return fmt.Errorf("writing %s: %w", path, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: edit it, then spate validate %s and spate run %s\n", path, path, path)
			return nil
		},
	}
	c.Flags().BoolVar(&force, "force", false, "overwrite an existing file")
	return c
}

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate EXPERIMENT.yaml...",
		Short: "Check experiment files: unknown keys, types and values, with file:line:column",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, path := range args {
				if _, err := experiment.Load(path); err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), err)
					bad++
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n", path)
			}
			if bad > 0 {
				return &exitErr{code: exitUsage, err: fmt.Errorf("%d of %d experiment files are invalid", bad, len(args))}
			}
			return nil
		},
	}
}
