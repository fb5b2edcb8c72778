// Package experiment is the model of a spate run: every type of an
// experiment file (apiVersion spate/v1, kind Experiment; the JSON Schema's
// types, see Schema), read from YAML with strict keys and errors that name
// the file, line and column (Load, Parse), or built in Go. The command
// line fills the same types: its flags override the fields of a file.
//
// It is the first stage of the data flow: experiment → workload →
// schedule → engine → client → record → metrics → verdict → outputs. The
// package only describes and checks the shape of a run; the internal plan
// package turns an Experiment into one (see spate.Run).
package experiment

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"

	"github.com/spate-dev/spate/internal/capread"
	"github.com/spate-dev/spate/internal/suggest"
	"github.com/spate-dev/spate/internal/yamlkeys"
	"github.com/spate-dev/spate/internal/yamllimit"
)

// APIVersion and Kind head every experiment file.
const (
	APIVersion = "spate/v1"
	Kind       = "Experiment"
)

// Experiment is one experiment: what to load, how, and what to do with
// the figures. The zero value of a field means its default; the fields that
// need to tell "zero" from "unset" are pointers (Go 1.26: new(false)).
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
	// Resilience tunes the resilience figures of every stage.
	Resilience Resilience `yaml:"resilience"`
	// Shard makes this process send one part of a load split over several.
	Shard Shard `yaml:"shard"`
	// Actions maps a verdict (pass, fail, invalid or error) to what to do
	// once the result is written: promote, roll back, notify.
	Actions map[string][]Action `yaml:"actions"`
	// Limits bound what the run keeps of responses and reads from files.
	Limits Limits `yaml:"limits"`

	// Path is the file the experiment was read from (Load), recorded in
	// the result; "" when it was built in Go.
	Path string `yaml:"-"`
	// WorkloadFile is the workload file Workload was read from, if any
	// (spate run --workload), recorded in the result.
	WorkloadFile string `yaml:"-"`
	// SHA256 is the hex SHA-256 of the file's bytes, for provenance.
	SHA256 string `yaml:"-"`

	// source and name locate the YAML paths of problems (Errors).
	source []byte
	name   string
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
	// itself never belongs in a file (default OPENAI_API_KEY).
	APIKeyEnv string `yaml:"apiKeyEnv"`
	// APIKey is the key itself, set in Go or by --api-key; it is never
	// read from nor written to a file, and wins over APIKeyEnv.
	APIKey      string            `yaml:"-" json:"-"`
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
	// AttemptTimeout gives up one attempt after this long and fails over
	// or retries (0: only Timeout).
	AttemptTimeout time.Duration `yaml:"attemptTimeout"`
	// TraceHeader sends a W3C traceparent header with every request
	// (default true).
	TraceHeader *bool `yaml:"traceHeader"`
	// Logprobs asks every chat or completions request for that many top
	// logprobs a token (1–20; 0: none), from which ICE is computed
	// (workload intents may ask for their own).
	Logprobs int `yaml:"logprobs"`
}

// SUT describes the version of the system under test, for provenance.
type SUT struct {
	Version string `yaml:"version"`
}

// Stage is one scenario of the run: open loop (rate) or closed loop
// (concurrency).
type Stage struct {
	Name    string  `yaml:"name"`
	Rate    float64 `yaml:"rate"`
	Arrival string  `yaml:"arrival"`
	// ComplexityShaping scales each open-loop gap by the request's
	// complexity score: rate × 0.75^(score/20).
	ComplexityShaping bool `yaml:"complexityShaping"`
	// Stampede adds cache stampedes to an open-loop stage: bursts of many
	// requests for one key, e.g. "every=30s,width=200ms,rate=500,keys=fresh".
	Stampede       string        `yaml:"stampede"`
	Burstiness     float64       `yaml:"burstiness"`
	RampFrom       float64       `yaml:"rampFrom"`
	Concurrency    int           `yaml:"concurrency"`
	MaxConcurrency int           `yaml:"maxConcurrency"`
	Duration       time.Duration `yaml:"duration"`
	Requests       int           `yaml:"requests"`
	Warmup         time.Duration `yaml:"warmup"`
	DrainTimeout   time.Duration `yaml:"drainTimeout"`
	// Faults are switched on for this stage only (the chaos of a
	// baseline / peak / chaos matrix).
	Faults *StageFaults `yaml:"faults"`
	// Workload, when set, replaces the experiment's workload fields it
	// sets, for this stage only.
	Workload *Workload `yaml:"workload"`

	// TokenRate makes the stage open loop in tokens per second instead of
	// requests per second: each gap of the arrival process is scaled by
	// the tokens the request before it is expected to take (input +
	// output, or output only with TokenRateBasis output).
	TokenRate float64 `yaml:"tokenRate"`
	// TokenRateBasis is what TokenRate counts: total (input + output
	// tokens, the default) or output.
	TokenRateBasis string `yaml:"tokenRateBasis"`
	// TopK, with a vector database as the target, is the number of
	// neighbours this stage asks for (default vector.k): recall@TopK.
	TopK int `yaml:"topK"`
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
	// LagBound is the floor of the validity rule's lag bound: a send later
	// than it makes a stage invalid only when it is also late against the
	// schedule's median gap and a tenth of the latency p50 (default 10ms;
	// see docs/figures.md).
	LagBound time.Duration `yaml:"lagBound"`
	// AllowInvalid accepts an invalid measurement: the run exits 0 rather
	// than 4 (its verdict is still "invalid").
	AllowInvalid bool `yaml:"allowInvalid"`
	// SLOFrom is the send time an open-loop stage's SLO thresholds (on
	// ttft, e2e, goodput and goodput_rps) are judged from: intended (the
	// default: what users felt) or sent.
	SLOFrom string `yaml:"sloFrom"`
	// TokenizerSample counts output tokens locally on every Nth request to
	// check the server's usage (default 16; 0: only when usage is missing).
	TokenizerSample *int `yaml:"tokenizerSample"`
	// Tokenizer is the tokenizer of lengths and local counts: cl100k_base,
	// o200k_base, llama3, a tokenizer.json path, or "server" / "server:URL"
	// (the target's own, through its tokenize endpoint).
	Tokenizer string `yaml:"tokenizer"`
}

// Outputs says where results go and what is printed. A path left empty
// writes nothing (spate run writes the result to
// spate-results/result.json by default).
type Outputs struct {
	// Result is the result file (schema spate/result/v1).
	Result string `yaml:"result"`
	// Records receives every request as a JSON line.
	Records string `yaml:"records"`
	// Quiet prints no progress and no summary.
	Quiet bool `yaml:"quiet"`
	// Progress is the interval of progress lines (default 5s; 0: none).
	Progress *time.Duration `yaml:"progress"`
	// ResultStdout also prints the result JSON on stdout at the end (for
	// kubectl logs).
	ResultStdout bool `yaml:"resultStdout"`
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
	// OTLPInterval is the interval between OTLP metric pushes.
	OTLPInterval time.Duration `yaml:"otlpInterval"`
}

// Chaos injects faults: Proxy starts the fault-injecting proxy in front of
// the target (stages' faults: url /admin/faults then reach it), Rules and
// Faults are run-wide fault rules for it, Requests the workload-side chaos
// fractions.
type Chaos struct {
	Proxy    bool     `yaml:"proxy"`
	Rules    []string `yaml:"rules"`
	Requests string   `yaml:"requests"`
	// Faults is a JSON file of a fault set, as PUT to /admin/faults
	// (implies Proxy).
	Faults string `yaml:"faults"`
	// Stats is the GET /admin/stats URL of a chaos proxy run elsewhere
	// (spate chaos proxy), for the chaos figures.
	Stats string `yaml:"stats"`
	// TMax is T_max of MSR (default 800ms).
	TMax time.Duration `yaml:"tMax"`
	// RecoveryBin is the bin width recovery after a fault window is
	// judged on.
	RecoveryBin time.Duration `yaml:"recoveryBin"`
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
	// TruthCache is the directory caching exact top-k ground truth
	// (default: the user cache dir, spate/truth).
	TruthCache string `yaml:"truthCache"`
	// Proxy puts spate's chaos proxy in front of the vector database
	// (chroma://, qdrant://: HTTP), so that chaos rules, fault sets and
	// stages' faults (url /admin/faults) reach its searches.
	Proxy bool `yaml:"proxy"`
}

// Probes interleaves security probe suites with the workload: built-in
// suite names, "all", or YAML suite files; Fraction is the share of
// requests that are probes (default 0.1).
type Probes struct {
	Suites   []string `yaml:"suites"`
	Fraction float64  `yaml:"fraction"`
}

// Resilience tunes the resilience figures (P99 slope, recovery time after
// a load step or faults) of every stage.
type Resilience struct {
	// Enabled computes them (default true).
	Enabled *bool `yaml:"enabled"`
	// Window is the sliding window of the slope (whole seconds, ≥ 2s).
	Window time.Duration `yaml:"window"`
	// RecoveryWindow is the window of the windowed P99 that recovery time
	// is measured on (whole seconds).
	RecoveryWindow time.Duration `yaml:"recoveryWindow"`
}

// Shard makes this process send one part of a load split over several
// (merge their results with spate merge).
type Shard struct {
	// Part is "I/N": send shard I of N (I from 0).
	Part string `yaml:"part"`
	// Count is the shard count when the index comes from
	// $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job); default
	// $SPATE_SHARDS.
	Count int `yaml:"count"`
	// StartAt is an RFC 3339 time to wait for before sending, so that
	// shards start together.
	StartAt string `yaml:"startAt"`
	// StartLateMax fails the run when StartAt is already this far in the
	// past (default 10s).
	StartLateMax time.Duration `yaml:"startLateMax"`
	// ClockCheck estimates this machine's clock offset against the
	// target's HTTP Date header when sharded (default true).
	ClockCheck *bool `yaml:"clockCheck"`
}

// Load reads and checks an experiment file. The files it names (datasets,
// images, length files, the workflow, a vector dataset, a chaos fault set)
// are made relative to the file's directory.
func Load(path string) (*Experiment, error) { return LoadContext(context.Background(), path) }

// LoadContext is Load with a read that stops when ctx is done: a FIFO
// nobody writes to cannot keep Ctrl-C from working.
func LoadContext(ctx context.Context, path string) (*Experiment, error) {
	data, err := capread.ReadFile(ctx, path, capread.SettingsLimit, "")
	if err != nil {
		return nil, fmt.Errorf("reading experiment: %w", err)
	}
	e, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	e.Path = path
	e.Resolve(filepath.Dir(path))
	return e, nil
}

// Parse reads and checks an experiment from data; name is used in errors,
// which have the form "name:line:column: message". Parse checks what this
// package can check alone (Problems); spate.Validate checks the rest.
func Parse(data []byte, name string) (*Experiment, error) {
	var e Experiment
	if err := unmarshal(data, &e); err != nil {
		err = yamlError(name, data, err, reflect.TypeOf(e))
		// With only keys unknown, what the file holds is checked too,
		// so that one validate lists all of it.
		var lax Experiment
		if len(yamlkeys.Find(data, reflect.TypeOf(e))) > 0 && lenient(data, &lax) == nil {
			lax.source, lax.name = data, name
			if perr := lax.Errors(lax.checks()); perr != nil {
				err = fmt.Errorf("%w\n%v", err, perr)
			}
		}
		return nil, err
	}
	e.source, e.name = data, name
	if err := e.Errors(e.checks()); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	e.SHA256 = hex.EncodeToString(sum[:])
	return &e, nil
}

// checks are the problems Parse finds in e: its kind and version, and
// Problems.
func (e *Experiment) checks() []Problem {
	var ps []Problem
	if e.APIVersion != APIVersion {
		ps = append(ps, Problem{"$.apiVersion", fmt.Sprintf("apiVersion must be %q, got %q", APIVersion, e.APIVersion)})
	}
	if e.Kind != Kind {
		ps = append(ps, Problem{"$.kind", fmt.Sprintf("kind must be %q, got %q", Kind, e.Kind)})
	}
	return append(ps, e.Problems()...)
}

// Resolve makes the relative file paths the experiment names relative to
// dir, the directory of the file that named them.
func (e *Experiment) Resolve(dir string) {
	e.Workload.Resolve(dir)
	for i := range e.Stages {
		if w := e.Stages[i].Workload; w != nil {
			w.Resolve(dir)
		}
	}
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	e.Workflow = rel(e.Workflow)
	e.Chaos.Faults = rel(e.Chaos.Faults)
	if !strings.HasPrefix(e.Vector.Dataset, "gen:") {
		e.Vector.Dataset = rel(e.Vector.Dataset)
	}
}

// unmarshal decodes strictly, bounded and without panics (see
// yamllimit.Decode).
func unmarshal(data []byte, e any) error { return yamllimit.Decode(data, e) }

// yamlError turns a go-yaml error into "file:line:col: message" plus the
// source excerpt it shows, in the words of the file rather than of Go: an
// unknown key with the known key it is nearest (of the keys of t, the
// type read into), a number where a duration goes with the unit it lacks,
// and a duration that does not parse at the place it is in data.
func yamlError(name string, data []byte, err error, t reflect.Type) error {
	if yamllimit.Check(data) != nil {
		return valueError(name, data, err, t) // over a limit: nothing more is parsed
	}
	var parts []string
	unk := yamlkeys.Find(data, t)
	if len(unk) > 0 {
		parts = append(parts, unknownKeys(name, data, unk))
	}
	// The values' errors, every top-level section's first (go-yaml stops
	// at the first of the file), with unknown keys let through.
	if lerr := lenient(data, reflect.New(t).Interface()); lerr != nil {
		errs := yamlkeys.SectionErrors(data, t)
		if len(errs) == 0 {
			errs = []error{lerr}
		}
		for _, e := range errs {
			parts = append(parts, valueError(name, data, e, t).Error())
		}
	} else if len(unk) == 0 {
		parts = append(parts, valueError(name, data, err, t).Error())
	}
	return errors.New(strings.Join(parts, "\n"))
}

// valueError is yamlError for one error of go-yaml's.
func valueError(name string, data []byte, err error, t reflect.Type) error {
	var se yaml.Error
	if errors.As(err, &se) && se.GetToken() != nil {
		tok := se.GetToken()
		pos := tok.Position
		msg := se.GetMessage()
		hint := ""
		switch {
		case strings.Contains(msg, "unknown field"):
			hint = " (check the spelling: unknown keys are errors; see spate run --help for the fields)"
			if key, ok := quoted(msg); ok {
				if best := suggest.Closest(key, yamlKeys(t)); best != "" {
					hint = fmt.Sprintf(" (did you mean %s?)", best)
				}
			}
		case strings.Contains(msg, "of type time.Duration"):
			msg = fmt.Sprintf("%s is not a duration: give it a unit, e.g. %sms or %ss", tok.Value, tok.Value, tok.Value)
		case strings.Contains(msg, "cannot unmarshal") && (strings.HasSuffix(msg, "of type float64") || strings.Contains(msg, "of type int") || strings.Contains(msg, "of type uint")):
			msg = fmt.Sprintf("%q is not a number: write one, e.g. 10 or 2.5", tok.Value)
		case strings.Contains(msg, "cannot unmarshal") && strings.HasSuffix(msg, "of type bool"):
			msg = fmt.Sprintf("%q is not true or false", tok.Value)
		}
		return fmt.Errorf("%s:%d:%d: %s%s\n%s", name, pos.Line, pos.Column, msg, hint, excerpt(err))
	}
	// A duration that does not parse ("5x0ms") comes without a position:
	// the place of its text in the file, when it is there once.
	if v, ok := quoted(err.Error()); ok && strings.Contains(err.Error(), "duration") && bytes.Count(data, []byte(v)) == 1 {
		i := bytes.Index(data, []byte(v))
		line := bytes.Count(data[:i], []byte("\n")) + 1
		col := i - bytes.LastIndexByte(data[:i], '\n')
		return fmt.Errorf("%s:%d:%d: %q is not a duration: write a number and a unit (ms, s, m, h), e.g. 500ms", name, line, col, v)
	}
	return fmt.Errorf("%s: %v", name, err)
}

// unknownKeys words every unknown key of a file at once (go-yaml stops at
// the first), each with the known key of its own mapping it is nearest.
func unknownKeys(name string, data []byte, unk []yamlkeys.Unknown) string {
	lines := bytes.Split(data, []byte("\n"))
	var b strings.Builder
	for i, u := range unk {
		if i > 0 {
			b.WriteByte('\n')
		}
		hint := fmt.Sprintf(" (the keys here: %s)", strings.Join(u.Known, ", "))
		if u.Nearest != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", u.Nearest)
		}
		fmt.Fprintf(&b, "%s:%d:%d: unknown field %q%s", name, u.Line, u.Column, u.Key, hint)
		if u.Line >= 1 && u.Line <= len(lines) {
			fmt.Fprintf(&b, "\n> %3d | %s\n        %s^", u.Line, bytes.TrimRight(lines[u.Line-1], "\r"), strings.Repeat(" ", max(u.Column-1, 0)))
		}
	}
	return b.String()
}

// lenient decodes data into v with unknown keys let through, for the
// errors of the values.
func lenient(data []byte, v any) error {
	return yamllimit.Guard(func() error { return yaml.Unmarshal(data, v) })
}

// quoted is the last double-quoted string in msg.
func quoted(msg string) (string, bool) {
	j := strings.LastIndexByte(msg, '"')
	if j <= 0 {
		return "", false
	}
	i := strings.LastIndexByte(msg[:j], '"')
	if i < 0 {
		return "", false
	}
	return msg[i+1 : j], true
}

// yamlKeys lists every YAML key of t and the types within it, for the
// "did you mean" of an unknown key.
func yamlKeys(t reflect.Type) []string {
	seen := map[reflect.Type]bool{}
	var keys []string
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			k := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if f.IsExported() && k != "" && k != "-" {
				keys = append(keys, k)
			}
			walk(f.Type)
		}
	}
	walk(t)
	return keys
}

func excerpt(err error) string {
	s := yaml.FormatError(err, false, true)
	if i := strings.Index(s, "\n"); i >= 0 {
		return s[i+1:]
	}
	return ""
}

// Problem is one thing wrong with an experiment, at a YAML path of it
// such as $.stages[0].rate.
type Problem struct {
	Path    string
	Message string
}

// Errors turns problems into one error (nil for none): a line each,
// sorted, as "file:line:column: message" when the experiment was read from
// a file (the position of the path, or of its nearest parent in the file),
// else as "path: message".
func (e *Experiment) Errors(ps []Problem) error {
	if len(ps) == 0 {
		return nil
	}
	lines := make([]string, len(ps))
	at := make([][2]int, len(ps))
	for i, p := range ps {
		if e.source == nil {
			lines[i] = strings.TrimPrefix(strings.TrimPrefix(p.Path, "$"), ".") + ": " + p.Message
			if p.Path == "$" || p.Path == "" {
				lines[i] = "experiment: " + p.Message
			}
			continue
		}
		line, col := position(e.source, p.Path)
		lines[i] = fmt.Sprintf("%s:%d:%d: %s", e.name, line, col, p.Message)
		at[i] = [2]int{line, col}
	}
	// In the file's order: by line, then column, then message (a sort of
	// the text put line 10 before line 9).
	idx := make([]int, len(lines))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := at[idx[a]], at[idx[b]]
		if x != y {
			return x[0] < y[0] || x[0] == y[0] && x[1] < y[1]
		}
		return lines[idx[a]] < lines[idx[b]]
	})
	sorted := make([]string, len(lines))
	for i, j := range idx {
		sorted[i] = lines[j]
	}
	return errors.New(strings.Join(sorted, "\n"))
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

// MinProgress is the shortest interval between progress lines: shorter
// floods the terminal (1ns printed 63,787 lines a second) and costs the
// run CPU.
const MinProgress = 100 * time.Millisecond

// Problems reports what is wrong with the experiment's shape, as far as
// this package can tell without the parsers of lengths, thresholds, SLOs
// and arrivals (spate.Validate runs those too): enumerations, stages that
// are neither open nor closed loop, negative values, control characters
// in headers, actions.
func (e *Experiment) Problems() []Problem {
	ps := valueProblems(e)
	at := func(path, format string, a ...any) {
		ps = append(ps, Problem{path, fmt.Sprintf(format, a...)})
	}
	switch e.Target.API {
	case "", "chat", "completions", "responses", "embeddings", "rerank", "score", "http":
	default:
		at("$.target.api", "api %q: use chat, completions, responses, embeddings, rerank, score or http", e.Target.API)
	}
	switch e.Target.IgnoreEOS {
	case "", "auto", "true", "false":
	default:
		at("$.target.ignoreEOS", "ignoreEOS %q: use auto, true or false", e.Target.IgnoreEOS)
	}
	if p := e.Outputs.Progress; p != nil && *p > 0 && *p < MinProgress {
		at("$.outputs.progress", "progress: %v would print a line every %v: give %v or more, or 0 for none", *p, *p, MinProgress)
	}
	if e.Target.Logprobs < 0 || e.Target.Logprobs > 20 {
		at("$.target.logprobs", "logprobs %d: ask for 1 to 20 top logprobs a token (0: none)", e.Target.Logprobs)
	}
	if e.Target.APIKeyEnv != "" && strings.HasPrefix(e.Target.APIKeyEnv, "sk-") {
		at("$.target.apiKeyEnv", "apiKeyEnv names an environment variable (e.g. OPENAI_API_KEY), not the key itself: keep keys out of files")
	}
	for i, spec := range e.Thresholds {
		p := fmt.Sprintf("$.thresholds[%d]", i)
		if !spec.AbortOnFail && (spec.Delay != 0 || spec.Window != 0) && !looksLikeTrigger(spec.Expr) {
			at(p, "delay and window only apply with abortOnFail: true, or to a trigger (delta(...), and, for)")
		}
	}
	switch e.Measurement.SLOFrom {
	case "", "intended", "sent":
	default:
		at("$.measurement.sloFrom", "sloFrom %q (--slo-from): use intended or sent", e.Measurement.SLOFrom)
	}
	if len(e.Stages) == 0 {
		at("$", "no stages: add at least one under stages:, e.g. {name: main, rate: 5, duration: 30s}")
	}
	seen := map[string]bool{}
	for i, s := range e.Stages {
		p := fmt.Sprintf("$.stages[%d]", i)
		switch {
		case s.Name == "":
			at(p, "stage %d has no name", i+1)
		case seen[s.Name]:
			at(p+".name", "stage name %q is used twice", s.Name)
		}
		seen[s.Name] = true
		trace := s.Arrival == "trace"
		loops := 0
		for _, set := range []bool{s.Rate > 0, s.Concurrency > 0, s.TokenRate > 0} {
			if set {
				loops++
			}
		}
		switch {
		case s.Rate < 0 || s.Concurrency < 0 || s.TokenRate < 0:
			// valueProblems names the negative value
		case trace && loops > 0:
			at(p, "stage %q: arrival trace replays the dataset's timestamps: give no rate, tokenRate or concurrency", s.Name)
		case !trace && loops != 1:
			at(p, "stage %q: give exactly one of rate (open loop, requests/s), tokenRate (open loop, tokens/s) or concurrency (closed loop)", s.Name)
		}
		switch s.TokenRateBasis {
		case "", "total", "output":
		default:
			at(p+".tokenRateBasis", "stage %q: tokenRateBasis %q: use total (input + output tokens) or output", s.Name, s.TokenRateBasis)
		}
		if s.TokenRateBasis != "" && s.TokenRate <= 0 {
			at(p+".tokenRateBasis", "stage %q: tokenRateBasis applies to a tokenRate", s.Name)
		}
		// Settings that do nothing in a stage's mode are errors, not
		// silently ignored.
		if s.Burstiness > 0 && s.Burstiness != 1 && s.Arrival != "gamma" {
			at(p+".burstiness", "stage %q: burstiness (--burstiness) is the shape of open-loop gamma arrivals: use it with arrival: gamma (--arrival gamma) or leave it out", s.Name)
		}
		if w := s.Workload; w != nil && w.Speed > 0 && w.Speed != 1 && !trace {
			at(p+".workload.speed", "stage %q: speed (--speed) scales a trace's clock: it applies to arrival: trace (--arrival trace) only", s.Name)
		}
		if s.ComplexityShaping && s.Concurrency > 0 {
			at(p+".complexityShaping", "stage %q: complexityShaping (--complexity-shaping) scales open-loop gaps: a closed loop (concurrency) has none", s.Name)
		}
		if s.Rate <= 0 && s.TokenRate <= 0 && !trace && s.MaxConcurrency > 0 {
			at(p+".maxConcurrency", "stage %q: maxConcurrency caps an open-loop rate; with concurrency it has no meaning", s.Name)
		}
		if s.Faults != nil && (!strings.HasPrefix(s.Faults.URL, "http://") && !strings.HasPrefix(s.Faults.URL, "https://") &&
			!strings.HasPrefix(s.Faults.URL, "/") || len(s.Faults.Set) == 0) {
			at(p+".faults", "stage %q: faults need url: (the injector's admin endpoint, e.g. /admin/faults on the target's host, or a full URL) and set: {...}", s.Name)
		}
		if w := s.Workload; w != nil && w.Seed != nil {
			at(p+".workload.seed", "stage %q: the seed is the experiment's (workload.seed at the top level)", s.Name)
		}
		if w := s.Workload; w != nil && w.ReuseAcrossStages {
			at(p+".workload.reuseAcrossStages", "stage %q: reuseAcrossStages is the experiment's (workload.reuseAcrossStages at the top level)", s.Name)
		}
		if s.Duration == 0 && s.Requests == 0 && !trace {
			at(p, "stage %q: give a duration (e.g. 30s) or a number of requests", s.Name)
		}
	}
	if sp := e.Workload.Speed; sp > 0 && sp != 1 {
		traced := false
		for _, s := range e.Stages {
			traced = traced || s.Arrival == "trace"
		}
		if !traced {
			at("$.workload.speed", "speed (--speed) scales a trace's clock: it applies to arrival: trace (--arrival trace) only")
		}
	}
	for verdict, actions := range e.Actions {
		switch verdict {
		case VerdictPass, VerdictFail, VerdictInvalid, VerdictError:
		default:
			at("$.actions."+verdict, "unknown verdict %q: use pass, fail, invalid or error", verdict)
		}
		for i, a := range actions {
			if err := a.Check(); err != nil {
				at(fmt.Sprintf("$.actions.%s[%d]", verdict, i), "%v", err)
			}
		}
	}
	return ps
}

// looksLikeTrigger reports whether a threshold is written as a trigger
// (watched while the run goes on, so delay and window apply without
// abortOnFail): it has a change (delta(, rel() or the word and or for. The
// verdict package's IsTrigger decides; this is the shape check alone.
func looksLikeTrigger(expr string) bool {
	l := " " + strings.ToLower(expr) + " "
	for _, w := range []string{" and ", " for ", "delta(", "rel(", "delta (", "rel ("} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// LoadWorkload reads a workload file: the fields of an experiment's
// workload section at the top level (see Workload), with its relative
// paths made relative to the file's directory. Errors have the form
// "path:line:column: message".
func LoadWorkload(path string) (*Workload, error) {
	return LoadWorkloadContext(context.Background(), path)
}

// LoadWorkloadContext is LoadWorkload with a read that stops when ctx is
// done.
func LoadWorkloadContext(ctx context.Context, path string) (*Workload, error) {
	data, err := capread.ReadFile(ctx, path, capread.SettingsLimit, "")
	if err != nil {
		return nil, fmt.Errorf("reading workload: %w", err)
	}
	var w Workload
	if err := unmarshal(data, &w); err != nil {
		return nil, yamlError(path, data, err, reflect.TypeOf(w))
	}
	w.Resolve(filepath.Dir(path))
	return &w, nil
}
