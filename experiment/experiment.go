// Package experiment reads experiment files: the YAML form of a spate run
// (apiVersion spate/v1, kind Experiment), with strict keys and errors that
// name the file, line and column. It only parses and checks; cmd/spate
// turns an Experiment into a run, with flags overriding the file.
package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/schedule"
	"github.com/spate-dev/spate/internal/verdict/gate"
	"github.com/spate-dev/spate/internal/verdict/threshold"
	"github.com/spate-dev/spate/internal/workload"
)

// APIVersion and Kind head every experiment file.
const (
	APIVersion = "spate/v1"
	Kind       = "Experiment"
)

// Experiment is one experiment file.
type Experiment struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   Metadata `yaml:"metadata"`
	Target     Target   `yaml:"target"`
	SUT        SUT      `yaml:"sut"`
	Workload   Workload `yaml:"workload"`
	// SLO holds per-request objectives: keys ttft, tpot, itl, e2e.
	SLO    map[string]time.Duration `yaml:"slo"`
	Stages []Stage                  `yaml:"stages"`
	// Measurement tunes how figures are taken.
	Measurement Measurement     `yaml:"measurement"`
	Thresholds  []ThresholdSpec `yaml:"thresholds"`
	Outputs     Outputs         `yaml:"outputs"`
	// Observe scrapes the server's metrics and exports spate's own.
	Observe Observe `yaml:"observe"`
	// Chaos injects faults through a proxy and from the workload side.
	Chaos Chaos `yaml:"chaos"`
	// Probes interleaves security probes with the workload.
	Probes Probes `yaml:"probes"`
	// Vector drives a vector database instead of an LLM API.
	Vector Vector `yaml:"vector"`
	// Workflow is the file of a multi-step request sent for every request.
	Workflow string `yaml:"workflow"`
	// Actions maps a verdict (pass, fail, invalid or error) to what to do
	// once the result is written: promote, roll back, notify.
	Actions map[string][]gate.Action `yaml:"actions"`

	// SHA256 is the hex SHA-256 of the file's bytes, for provenance.
	SHA256 string `yaml:"-"`
}

// Metadata names the experiment.
type Metadata struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
}

// Target is the system under load.
type Target struct {
	URL   string `yaml:"url"`
	API   string `yaml:"api"`
	Model string `yaml:"model"`
	// APIKeyEnv names the environment variable holding the API key; a key
	// itself never belongs in a file.
	APIKeyEnv   string            `yaml:"apiKeyEnv"`
	Headers     map[string]string `yaml:"headers"`
	Stream      *bool             `yaml:"stream"`
	IgnoreEOS   string            `yaml:"ignoreEOS"`
	Timeout     time.Duration     `yaml:"timeout"`
	IdleTimeout time.Duration     `yaml:"idleTimeout"`
	// Method, Path and Body are for api: http.
	Method string `yaml:"method"`
	Path   string `yaml:"path"`
	Body   string `yaml:"body"`
	// URLs are more upstreams of the same service beside URL, used by
	// Policy (round-robin or failover).
	URLs   []string `yaml:"urls"`
	Policy string   `yaml:"policy"`
	// Retries retries a request that failed before any token, with
	// exponential backoff from RetryBackoff, within RetryBudget (extra
	// attempts as a fraction of requests).
	Retries      int           `yaml:"retries"`
	RetryBackoff time.Duration `yaml:"retryBackoff"`
	RetryBudget  float64       `yaml:"retryBudget"`
}

// SUT describes the version of the system under test, for provenance.
type SUT struct {
	Version string `yaml:"version"`
}

// Workload says what to send: synthetic lengths, a dataset, intents,
// shared prefixes, popularity, turns and images (see workload.Spec).
type Workload = workload.Spec

// Stage is one scenario of the run: open loop (rate) or closed loop
// (concurrency).
type Stage struct {
	Name    string  `yaml:"name"`
	Rate    float64 `yaml:"rate"`
	Arrival string  `yaml:"arrival"`
	// ComplexityShaping scales each open-loop gap by the request's
	// complexity score: rate × 0.75^(score/20).
	ComplexityShaping bool          `yaml:"complexityShaping"`
	Burstiness        float64       `yaml:"burstiness"`
	RampFrom          float64       `yaml:"rampFrom"`
	Concurrency       int           `yaml:"concurrency"`
	MaxConcurrency    int           `yaml:"maxConcurrency"`
	Duration          time.Duration `yaml:"duration"`
	Requests          int           `yaml:"requests"`
	Warmup            time.Duration `yaml:"warmup"`
	DrainTimeout      time.Duration `yaml:"drainTimeout"`
	// Faults are switched on for this stage only (the chaos of a
	// baseline / peak / chaos matrix).
	Faults *StageFaults `yaml:"faults"`
	// Workload, when set, replaces the experiment's workload fields it
	// sets, for this stage only.
	Workload *Workload `yaml:"workload"`
}

// StageFaults names a fault injector's admin endpoint and what to set there:
// the settings are PUT as JSON when the stage starts and the endpoint gets
// DELETE when it ends (the simulator's /admin/faults works this way). A URL
// that starts with "/" is on the target's host.
type StageFaults struct {
	URL string         `yaml:"url"`
	Set map[string]any `yaml:"set"`
}

// ThresholdSpec is one threshold: an expression, written as a plain string,
// or an object that also stops the run when the expression fails over a
// sliding window while the run goes on.
type ThresholdSpec struct {
	Expr string `yaml:"expr"`
	// AbortOnFail evaluates Expr every second over the last Window (after
	// Delay into each stage) and stops the run when it fails.
	AbortOnFail bool          `yaml:"abortOnFail"`
	Delay       time.Duration `yaml:"delay"`
	Window      time.Duration `yaml:"window"`
}

// UnmarshalYAML reads a threshold written as a string or as an object.
func (t *ThresholdSpec) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err == nil {
		*t = ThresholdSpec{Expr: s}
		return nil
	}
	type plain ThresholdSpec
	var p plain
	if err := unmarshal(&p); err != nil {
		return err
	}
	*t = ThresholdSpec(p)
	return nil
}

// Measurement tunes how figures are taken (--lag-bound, --tokenizer-sample).
type Measurement struct {
	LagBound        time.Duration `yaml:"lagBound"`
	TokenizerSample *int          `yaml:"tokenizerSample"`
	// Tokenizer is the tokenizer of lengths and local counts: cl100k_base,
	// o200k_base, llama3 or a tokenizer.json path.
	Tokenizer string `yaml:"tokenizer"`
}

// Outputs says where results go and what is printed.
type Outputs struct {
	Result   string        `yaml:"result"`
	Records  string        `yaml:"records"`
	Quiet    bool          `yaml:"quiet"`
	Progress time.Duration `yaml:"progress"`
	// Report, Markdown, JUnit and SeriesCSV are more outputs: a
	// self-contained HTML report, a Markdown summary, the thresholds as
	// JUnit XML and the per-second series as CSV.
	Report    string `yaml:"report"`
	Markdown  string `yaml:"markdown"`
	JUnit     string `yaml:"junit"`
	SeriesCSV string `yaml:"seriesCsv"`
}

// Observe is the telemetry of a run: the server's Prometheus metrics
// scraped onto the run's time line, and spate's own metrics exported.
type Observe struct {
	Scrape         []string      `yaml:"scrape"`
	ScrapeInterval time.Duration `yaml:"scrapeInterval"`
	// ScrapeMetrics are more metrics to keep: name or name{label="v"}.
	ScrapeMetrics []string `yaml:"scrapeMetrics"`
	MetricsAddr   string   `yaml:"metricsAddr"`
	OTLPEndpoint  string   `yaml:"otlpEndpoint"`
	OTLPProtocol  string   `yaml:"otlpProtocol"`
	OTLPTraces    bool     `yaml:"otlpTraces"`
}

// Chaos injects faults: Proxy starts the fault-injecting proxy in front of
// the target (stages' faults: url /admin/faults then reach it), Rules are
// run-wide fault rules for it, Requests the workload-side chaos fractions.
type Chaos struct {
	Proxy    bool     `yaml:"proxy"`
	Rules    []string `yaml:"rules"`
	Requests string   `yaml:"requests"`
}

// Vector is a vector search target: URL (pgvector://, chroma://,
// qdrant://), its dataset (a file or gen:N,DIM,CLUSTERS,QUERIES), distance
// metric, k, the search breadths to sweep (one stage each; -1 exact), and
// whether to load the dataset first.
type Vector struct {
	URL      string `yaml:"url"`
	Dataset  string `yaml:"dataset"`
	Metric   string `yaml:"metric"`
	K        int    `yaml:"k"`
	EfSearch []int  `yaml:"efSearch"`
	Load     *bool  `yaml:"load"`
}

// Probes interleaves security probe suites with the workload.
type Probes struct {
	Suites   []string `yaml:"suites"`
	Fraction float64  `yaml:"fraction"`
}

// Load reads and checks an experiment file.
func Load(path string) (*Experiment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading experiment: %w", err)
	}
	return Parse(data, path)
}

// Parse reads and checks an experiment from data; name is used in errors,
// which have the form "name:line:column: message".
func Parse(data []byte, name string) (*Experiment, error) {
	var e Experiment
	if err := unmarshal(data, &e); err != nil {
		return nil, yamlError(name, err)
	}
	if err := e.check(data, name); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	e.SHA256 = hex.EncodeToString(sum[:])
	return &e, nil
}

// unmarshal decodes strictly. go-yaml v1.19.2 panics on some malformed
// input (found by FuzzParse, e.g. "stages:\n  - [\n"); that becomes an error.
func unmarshal(data []byte, e any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed YAML (the parser failed: %v): check brackets, quotes and indentation", r)
		}
	}()
	return yaml.UnmarshalWithOptions(data, e, yaml.DisallowUnknownField())
}

// yamlError turns a go-yaml error into "file:line:col: message" plus the
// source excerpt it shows.
func yamlError(name string, err error) error {
	var se yaml.Error
	if errors.As(err, &se) && se.GetToken() != nil {
		pos := se.GetToken().Position
		msg := se.GetMessage()
		hint := ""
		if strings.Contains(msg, "unknown field") {
			hint = " (check the spelling: unknown keys are errors; see spate run --help for the fields)"
		}
		return fmt.Errorf("%s:%d:%d: %s%s\n%s", name, pos.Line, pos.Column, msg, hint, excerpt(err))
	}
	return fmt.Errorf("%s: %v", name, err)
}

func excerpt(err error) string {
	s := yaml.FormatError(err, false, true)
	if i := strings.Index(s, "\n"); i >= 0 {
		return s[i+1:]
	}
	return ""
}

// checker reports semantic errors at the position of a YAML path.
type checker struct {
	name string
	data []byte
	errs []string
}

func (c *checker) at(path, format string, a ...any) {
	line, col := position(c.data, path)
	c.errs = append(c.errs, fmt.Sprintf("%s:%d:%d: %s", c.name, line, col, fmt.Sprintf(format, a...)))
}

// position finds where a YAML path starts in data (1:1 if it cannot).
func position(data []byte, path string) (line, col int) {
	defer func() {
		if recover() != nil {
			line, col = 1, 1
		}
	}()
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return 1, 1
	}
	for p := path; p != ""; p = parent(p) {
		yp, err := yaml.PathString(p)
		if err != nil {
			continue
		}
		n, err := yp.FilterFile(f)
		if err != nil || n == nil || n.GetToken() == nil {
			continue
		}
		pos := n.GetToken().Position
		return pos.Line, pos.Column
	}
	return 1, 1
}

// parent strips the last element of a YAML path ("" after "$").
func parent(p string) string {
	if p == "$" {
		return ""
	}
	if i := strings.LastIndexAny(p, ".["); i > 0 {
		return p[:i]
	}
	return "$"
}

func (e *Experiment) check(data []byte, name string) error {
	c := &checker{name: name, data: data}
	if e.APIVersion != APIVersion {
		c.at("$.apiVersion", "apiVersion must be %q, got %q", APIVersion, e.APIVersion)
	}
	if e.Kind != Kind {
		c.at("$.kind", "kind must be %q, got %q", Kind, e.Kind)
	}
	switch e.Target.API {
	case "", "chat", "completions", "embeddings", "http":
	default:
		c.at("$.target.api", "api %q: use chat, completions, embeddings or http", e.Target.API)
	}
	switch e.Target.IgnoreEOS {
	case "", "auto", "true", "false":
	default:
		c.at("$.target.ignoreEOS", "ignoreEOS %q: use auto, true or false", e.Target.IgnoreEOS)
	}
	if e.Target.APIKeyEnv != "" && strings.HasPrefix(e.Target.APIKeyEnv, "sk-") {
		c.at("$.target.apiKeyEnv", "apiKeyEnv names an environment variable (e.g. OPENAI_API_KEY), not the key itself: keep keys out of files")
	}
	for _, f := range []struct{ path, v string }{{"$.workload.inputTokens", e.Workload.InputTokens}, {"$.workload.outputTokens", e.Workload.OutputTokens}} {
		if f.v != "" {
			if _, err := workload.ParseLengths(f.v); err != nil {
				c.at(f.path, "%v", err)
			}
		}
	}
	for k := range e.SLO {
		if _, err := metrics.ParseSLO(k + "=" + e.SLO[k].String()); err != nil {
			c.at("$.slo."+k, "%v", err)
		}
	}
	for i, spec := range e.Thresholds {
		p := fmt.Sprintf("$.thresholds[%d]", i)
		if _, err := threshold.Parse(spec.Expr); err != nil {
			c.at(p, "%v", err)
		}
		if !spec.AbortOnFail && (spec.Delay != 0 || spec.Window != 0) {
			c.at(p, "delay and window only apply with abortOnFail: true")
		}
		if spec.Delay < 0 || spec.Window < 0 {
			c.at(p, "delay and window must not be negative")
		}
	}
	if len(e.Stages) == 0 {
		c.at("$", "no stages: add at least one under stages:, e.g. {name: main, rate: 5, duration: 30s}")
	}
	seen := map[string]bool{}
	for i, s := range e.Stages {
		p := fmt.Sprintf("$.stages[%d]", i)
		switch {
		case s.Name == "":
			c.at(p, "stage %d has no name", i+1)
		case seen[s.Name]:
			c.at(p+".name", "stage name %q is used twice", s.Name)
		}
		seen[s.Name] = true
		trace := s.Arrival == "trace"
		switch {
		case trace && (s.Rate > 0 || s.Concurrency > 0):
			c.at(p, "stage %q: arrival trace replays the dataset's timestamps: give no rate or concurrency", s.Name)
		case !trace && (s.Rate > 0) == (s.Concurrency > 0):
			c.at(p, "stage %q: give exactly one of rate (open loop) or concurrency (closed loop)", s.Name)
		}
		if s.Rate > 0 {
			arrival := s.Arrival
			if arrival == "" {
				arrival = "poisson"
			}
			b := s.Burstiness
			if b == 0 {
				b = 1
			}
			if s.RampFrom > 0 {
				if _, err := schedule.NewRamp(arrival, s.RampFrom, s.Rate, s.Warmup+s.Duration, 0); err != nil {
					c.at(p+".rampFrom", "stage %q: %v", s.Name, err)
				}
			} else if _, err := schedule.New(arrival, s.Rate, b, 0); err != nil {
				c.at(p, "stage %q: %v", s.Name, err)
			}
		} else if s.MaxConcurrency > 0 {
			c.at(p+".maxConcurrency", "stage %q: maxConcurrency caps an open-loop rate; with concurrency it has no meaning", s.Name)
		}
		if s.Rate < 0 || s.Concurrency < 0 || s.MaxConcurrency < 0 || s.Requests < 0 || s.Duration < 0 || s.Warmup < 0 {
			c.at(p, "stage %q: negative values are not allowed", s.Name)
		}
		if s.Faults != nil && (!strings.HasPrefix(s.Faults.URL, "http://") && !strings.HasPrefix(s.Faults.URL, "https://") &&
			!strings.HasPrefix(s.Faults.URL, "/") || len(s.Faults.Set) == 0) {
			c.at(p+".faults", "stage %q: faults need url: (the injector's admin endpoint, e.g. /admin/faults on the target's host, or a full URL) and set: {...}", s.Name)
		}
		if w := s.Workload; w != nil {
			if w.Seed != nil {
				c.at(p+".workload.seed", "stage %q: the seed is the experiment's (workload.seed at the top level)", s.Name)
			}
			for _, f := range []struct{ path, v string }{{p + ".workload.inputTokens", w.InputTokens}, {p + ".workload.outputTokens", w.OutputTokens}} {
				if f.v != "" {
					if _, err := workload.ParseLengths(f.v); err != nil {
						c.at(f.path, "%v", err)
					}
				}
			}
		}
		if s.Duration == 0 && s.Requests == 0 && !trace {
			c.at(p, "stage %q: give a duration (e.g. 30s) or a number of requests", s.Name)
		}
	}
	for verdict, actions := range e.Actions {
		switch verdict {
		case gate.Pass, gate.Fail, gate.Invalid, gate.Error:
		default:
			c.at("$.actions."+verdict, "unknown verdict %q: use pass, fail, invalid or error", verdict)
		}
		for i, a := range actions {
			if err := a.Check(); err != nil {
				c.at(fmt.Sprintf("$.actions.%s[%d]", verdict, i), "%v", err)
			}
		}
	}
	if len(c.errs) > 0 {
		sort.Strings(c.errs)
		return errors.New(strings.Join(c.errs, "\n"))
	}
	return nil
}

// LoadWorkload reads a workload file: the fields of an experiment's
// workload section at the top level (see workload.Spec). Errors have the
// form "path:line:column: message".
func LoadWorkload(path string) (*Workload, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading workload: %w", err)
	}
	var w Workload
	if err := unmarshal(data, &w); err != nil {
		return nil, yamlError(path, err)
	}
	for _, f := range []struct{ key, v string }{{"inputTokens", w.InputTokens}, {"outputTokens", w.OutputTokens}} {
		if f.v != "" {
			if _, err := workload.ParseLengths(f.v); err != nil {
				return nil, fmt.Errorf("%s: %s %v", path, f.key, err)
			}
		}
	}
	return &w, nil
}
