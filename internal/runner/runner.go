// Package runner runs a plan, one or more stages of load in order, through
// the engine into a result: it is the glue between engine, metrics,
// thresholds and the result file, and holds no figure of its own.
//
// Stage: it drives the engine stage over a plan's stages and gathers records,
// metrics and thresholds into the result.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package runner

import (
	"context"
	"crypto/sha256"
	"crypto/sha3"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/spate-dev/spate/internal/engine"
	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/schedule"
	"github.com/spate-dev/spate/internal/verdict/threshold"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/result"
)

// Stage is one scenario of load.
type Stage struct {
	Name string
	// Arrival and Rate make the stage open-loop; Concurrency closed-loop.
	Arrival    string
	Rate       float64
	Burstiness float64
	// RampFrom, when positive, ramps the rate linearly from RampFrom to
	// Rate over the stage's warm-up and duration.
	RampFrom       float64
	Concurrency    int
	MaxConcurrency int
	Duration       time.Duration
	Requests       int
	Warmup         time.Duration
	DrainTimeout   time.Duration
	SLO            metrics.SLO
	LagBound       time.Duration
	// Faults, when set, are switched on for this stage only.
	Faults *Faults
	// Source, when set, replaces the plan's workload for this stage.
	Source workload.Source
	// Trace, when set, replays a timed trace: request n is sent at its
	// offset (open loop; Rate and Arrival are not used).
	Trace *schedule.Trace
	// Shape scales each open-loop gap by the request's complexity: the
	// rate of a request with score s is Rate × 0.75^(s/20).
	Shape bool
	// TokenRate, when positive, paces the stage open loop in tokens per
	// second instead of Rate: each gap of the arrival process is scaled by
	// the expected tokens of the request before it (see
	// schedule.TokenRate); OutputBasis counts output tokens only.
	TokenRate   float64
	OutputBasis bool
	// Pacer, when set, is the stage's open-loop pacer, in place of the one
	// Arrival, Rate and RampFrom make (e.g. a schedule.Stampede over it).
	Pacer schedule.Pacer
}

// Abort is a threshold that stops the run when it fails while the run
// goes on (abortOnFail in an experiment file).
type Abort struct {
	Threshold threshold.Threshold
	// Delay is how long into a stage before the first evaluation.
	Delay time.Duration
	// Window is the span of recent seconds evaluated (default 10 s).
	Window time.Duration
}

// DefaultAbortWindow is the window of an Abort that sets none.
const DefaultAbortWindow = 10 * time.Second

// abortable lists what a windowed threshold can be evaluated on.
var abortable = map[string]bool{
	"ttft": true, "tpot": true, "e2e": true, "itl": true,
	"error_rate": true, "goodput": true, "goodput_rps": true, "rps": true,
	"input_tps": true, "output_tps": true, "total_tps": true, "stps": true,
}

// CheckAborts reports an abort threshold on a figure that is not kept over
// a window.
func CheckAborts(as []Abort) error {
	for _, a := range as {
		if a.Threshold.Input != "" {
			return fmt.Errorf("threshold %q cannot abort a run: the figures by input length are not kept over a window", a.Threshold.Expr)
		}
		if !abortable[a.Threshold.Metric] {
			return fmt.Errorf("threshold %q cannot abort a run: abortOnFail works on ttft, tpot, e2e, itl, error_rate, goodput, goodput_rps, rps, stps and *_tps", a.Threshold.Expr)
		}
		if a.Delay < 0 || a.Window < 0 {
			return fmt.Errorf("threshold %q: delay and window must not be negative", a.Threshold.Expr)
		}
	}
	return nil
}

// Checker is implemented by clients that can tell, before a run, whether
// their target is reachable.
type Checker interface {
	Check(ctx context.Context) error
}

// Plan is everything a run needs.
type Plan struct {
	Stages     []Stage
	Source     workload.Source
	Client     engine.Client
	Thresholds []threshold.Threshold
	// Aborts are thresholds checked every second during each stage they
	// apply to, over a sliding window; the first that fails stops the run.
	Aborts []Abort
	// Triggers are watched every second during each stage they apply to
	// (see Trigger).
	Triggers []Trigger
	// ReuseAcrossStages makes every stage ask Source's requests from the
	// first; by default a stage goes on where the stages before it
	// stopped (workload.Offset), so it asks new prompts.
	ReuseAcrossStages bool
	Seed              uint64
	Provenance        result.Provenance
	Config            result.Config
	Version           string
	// Records, when set, receives every request as a JSON line.
	Records io.Writer
	// Progress, when set, is called every ProgressEvery during each stage
	// with the counts so far.
	Progress      ProgressFunc
	ProgressEvery time.Duration
	// Observers watch the run from the side (server metrics, live export).
	Observers []Observer
	// Shard, when Count > 1, makes this process send one shard of the load
	// (see shard.go).
	Shard Shard
	// Redact, when set, masks secrets in every record's message before
	// the recorder, the records file and the observers see it.
	Redact func(string) string
	// Defines lists what, besides the requests the sources make, defines
	// what a run measures: the API, whether it streams, a workflow file's
	// digest. Each enters the workload digest, and so the fingerprint.
	Defines []string
	// Hurry, once closed after the run's context is cancelled, ends the
	// drain at once (a second Ctrl-C): see engine.Config.Hurry.
	Hurry <-chan struct{}
	// SLOFromSent judges an open-loop stage's thresholds on ttft, e2e,
	// goodput and goodput_rps from the send time; by default they are
	// judged from the intended send time (see threshold.Intended).
	SLOFromSent bool
}

// judge evaluates a stage's thresholds, ttft, e2e and goodput from the
// intended send time in an open-loop stage unless p.SLOFromSent.
func judge(p Plan, sc *result.Scenario, hist map[string]string) ([]threshold.Outcome, bool) {
	return threshold.EvalStage(p.Thresholds, sc.Name, sc.Load.Mode == "open", p.SLOFromSent, metrics.Source{Scenario: sc, Hists: hist})
}

// ProgressFunc receives a stage's progress: the time since it began, the
// time left (0 when it ends by a request count) and the counts so far.
type ProgressFunc func(st Stage, elapsed, remaining time.Duration, pr metrics.Progress)

// Observer watches a run from the side. StageStart and StageEnd are called
// in order from the runner's goroutine; Sent and Record from many
// goroutines at once, and must be quick.
type Observer interface {
	// StageStart is called as a stage begins; ctx ends with the stage.
	StageStart(ctx context.Context, st Stage, start time.Time)
	// Sent is called when a request is sent.
	Sent(stage string, at, intended time.Time, warmup bool)
	// Record is called with every finished request; rec must not be kept.
	Record(stage string, rec *record.Record)
	// StageEnd is called once the stage's scenario is computed; the
	// observer may add its figures to sc.
	StageEnd(st Stage, sc *result.Scenario)
}

// Run runs the plan's stages in order. When ctx is cancelled it stops
// sending, drains briefly and returns the partial result with Interrupted
// set. The error is for runs that could not start or complete; a result is
// returned whenever one was measured, even with an error.
func Run(ctx context.Context, p Plan) (*result.Result, error) {
	if c, ok := p.Client.(Checker); ok {
		if err := c.Check(ctx); err != nil {
			return nil, err
		}
	}
	res := &result.Result{
		Schema:       result.Schema,
		SpateVersion: p.Version,
		StartedAt:    time.Now().UTC(),
		Provenance:   p.Provenance,
		Config:       p.Config,
		Histograms:   map[string]map[string]string{},
		Scenarios:    []result.Scenario{},
	}
	res.Provenance.WorkloadSHA256 = workloadDigest(p)
	if s, ok := p.Client.(interface{ Server() *result.ServerInfo }); ok {
		res.Provenance.Server = s.Server()
	}
	if t, ok := p.Client.(interface{ Traps() []string }); ok {
		res.Warnings = append(res.Warnings, t.Traps()...)
	}
	var rw *record.Writer
	if p.Records != nil {
		rw = record.NewWriter(p.Records, res.StartedAt)
	}
	res.ThresholdsPassed = true
	// A stage that fails is reported and the next ones still run: one
	// broken stage must not lose the others.
	var stageErrs []error
	var prev threshold.Source // the previous stage's figures, a trigger's baseline
	// asked counts the requests the stages so far asked of the plan's
	// workload (over every shard: each sent about its share), where the
	// next stage goes on.
	var asked uint64
	for _, st := range p.Stages {
		sc, hist, out, model, aborted, err := runStage(ctx, p, st, rw, prev, asked)
		if !p.ReuseAcrossStages && st.Source == nil && st.Trace == nil {
			asked += out.Sent * uint64(max(p.Shard.Count, 1))
		}
		if model != "" {
			// The model the server says it served beats the one asked for.
			res.Provenance.Model = model
		}
		if err != nil {
			err = fmt.Errorf("stage %s: %w", st.Name, err)
			stageErrs = append(stageErrs, err)
			res.Warnings = append(res.Warnings, err.Error())
		}
		if out.Interrupted && (aborted == nil || ctx.Err() != nil) {
			res.Interrupted = true
		}
		if sc != nil {
			outs, pass := judge(p, sc, hist)
			for _, o := range sc.Thresholds { // the triggers', filled by runStage
				pass = pass && o.Pass
			}
			sc.Thresholds = append(outs, sc.Thresholds...)
			res.ThresholdsPassed = res.ThresholdsPassed && pass
			switch {
			case aborted != nil && aborted.Trigger:
				res.ThresholdsPassed = false
				res.Aborted = fmt.Sprintf("stage %s: trigger %s fired %.0f s into the stage (%.4g): stopped", sc.Name, aborted.Expr, *aborted.FiredAtS, aborted.Value)
			case aborted != nil:
				sc.Thresholds = append(sc.Thresholds, *aborted)
				res.ThresholdsPassed = false
				res.Aborted = fmt.Sprintf("stage %s: %s failed during the run (%.4g): stopped", sc.Name, aborted.Expr, aborted.Value)
			}
			prev = metrics.Source{Scenario: sc, Hists: hist}
			res.Scenarios = append(res.Scenarios, *sc)
			res.Histograms[sc.Name] = hist
		}
		if res.Interrupted || aborted != nil {
			break
		}
	}
	runErr := errors.Join(stageErrs...)
	res.EndedAt = time.Now().UTC()
	res.Fingerprint = Fingerprint(res.Provenance.Model, res.Provenance.SUTVersion, res.Provenance.WorkloadSHA256)
	if rw != nil {
		if err := rw.Flush(); err != nil && runErr == nil {
			runErr = err
		}
	}
	return res, runErr
}

// workloadDigest identifies the plan's workload: the source's digest, or,
// when stages bring their own, the digest of all of them in order.
func workloadDigest(p Plan) string {
	base := sourcesDigest(p)
	if len(p.Defines) == 0 {
		return base
	}
	h := sha256.New()
	h.Write([]byte("defines/v1\n" + base + "\n" + strings.Join(p.Defines, "\n")))
	return hex.EncodeToString(h.Sum(nil))
}

// sourcesDigest is the digest of the plan's sources: the plan's, or, when
// stages bring their own, all of them in order.
func sourcesDigest(p Plan) string {
	own := false
	for _, st := range p.Stages {
		own = own || st.Source != nil
	}
	if !own {
		return p.Source.Digest()
	}
	h := sha256.New()
	for _, st := range p.Stages {
		src := p.Source
		if st.Source != nil {
			src = st.Source
		}
		h.Write([]byte(st.Name + "=" + src.Digest() + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// CheckThresholds reports a threshold whose {stage:NAME} selector names no
// stage of the plan, which would otherwise never be evaluated, and one on a
// figure by input length (an {input:…} selector) of ttft or e2e that an
// open-loop stage would judge from the intended send time (unless fromSent):
// the figures by input length are kept from the send time only, so it could
// only ever fail.
func CheckThresholds(stages []Stage, ts []threshold.Threshold, fromSent bool) error {
	names := map[string]bool{}
	var list []string
	for _, s := range stages {
		names[s.Name] = true
		list = append(list, s.Name)
	}
	for _, t := range ts {
		if t.Stage != "" && !names[t.Stage] {
			return fmt.Errorf("threshold %q selects stage %q, which this run does not have (stages: %s)", t.Expr, t.Stage, strings.Join(list, ", "))
		}
		if _, twin := threshold.Intended[t.Metric]; !twin || t.Input == "" || fromSent {
			continue
		}
		for _, s := range stages {
			if (t.Stage == "" || t.Stage == s.Name) && s.Concurrency == 0 {
				return fmt.Errorf("threshold %q: figures by input length are kept from the send time only, and open-loop stage %q judges %s from the intended send time: use --slo-from sent (measurement.sloFrom: sent) or leave out {input:%s}", t.Expr, s.Name, t.Metric, t.Input)
			}
		}
	}
	return nil
}

// Fingerprint is the joint fingerprint of docs/design.md §3: the first 16 hex
// digits of SHA3-256 of "model|sut_version|workload_sha256".
func Fingerprint(model, sutVersion, workloadSHA256 string) string {
	sum := sha3.Sum256([]byte(model + "|" + sutVersion + "|" + workloadSHA256))
	return hex.EncodeToString(sum[:])[:16]
}

// sink tees records to the recorder, the records file and the observers.
type sink struct {
	rec    *metrics.Recorder
	rw     *record.Writer
	stage  string
	obs    []Observer
	redact func(string) string
}

func (s sink) Sent(at, intended time.Time, warmup bool) {
	s.rec.Sent(at, intended, warmup)
	for _, o := range s.obs {
		o.Sent(s.stage, at, intended, warmup)
	}
}

func (s sink) Record(r *record.Record) {
	if r.ErrMsg != "" && s.redact != nil {
		r.ErrMsg = s.redact(r.ErrMsg)
	}
	s.rec.Record(r)
	if s.rw != nil {
		s.rw.Write(s.stage, r)
	}
	for _, o := range s.obs {
		o.Record(s.stage, r)
	}
}

func runStage(ctx context.Context, p Plan, st Stage, rw *record.Writer, prev threshold.Source, asked uint64) (*result.Scenario, map[string]string, engine.Outcome, string, *threshold.Outcome, error) {
	ecfg := engine.Config{
		Concurrency: st.Concurrency, MaxConcurrency: st.MaxConcurrency,
		Duration: st.Duration, Requests: st.Requests, Warmup: st.Warmup, DrainTimeout: st.DrainTimeout,
		Source: p.Source, Client: p.Client, Hurry: p.Hurry,
	}
	switch {
	case st.Source != nil:
		ecfg.Source = st.Source
	case p.Source != nil && st.Trace == nil:
		ecfg.Source, ecfg.SeqBase = workload.Offset(p.Source, asked), asked
	}
	mode := "closed"
	if st.Concurrency <= 0 {
		mode = "open"
		if st.TokenRate > 0 {
			ecfg.Source = pacedTokens(ecfg.Source, st.OutputBasis)
		}
		if st.TokenRate > 0 || st.Shape {
			// The pacer reads request n−1 just after the engine built it.
			ecfg.Source = workload.Memo(ecfg.Source)
		}
		pacer, err := stagePacer(st, p.Seed, ecfg.Source)
		if err != nil {
			return nil, nil, engine.Outcome{}, "", nil, err
		}
		if st.Shape {
			src := ecfg.Source
			pacer = schedule.Shaped{Inner: pacer, Factor: func(n uint64) float64 {
				r, err := src.Request(n)
				if err != nil {
					return 1 // the engine reports the error when it asks
				}
				return workload.ShapeFactor(r.Complexity)
			}}
		}
		ecfg.Pacer = pacer
	}
	st, ecfg = p.Shard.apply(st, ecfg)
	var aborts []Abort
	var window time.Duration
	for _, a := range p.Aborts {
		if a.Threshold.Stage == "" || a.Threshold.Stage == st.Name {
			if a.Window <= 0 {
				a.Window = DefaultAbortWindow
			}
			aborts = append(aborts, a)
			window = max(window, a.Window)
		}
	}
	trigs := triggersFor(p.Triggers, st.Name)
	window = max(window, triggerSpan(trigs))
	start := time.Now()
	rec := metrics.New(metrics.Config{
		Start: start, SLO: st.SLO, Mode: mode, Arrival: st.Arrival, TargetRate: st.Rate,
		TargetTokenRate: st.TokenRate, OutputBasis: st.OutputBasis, GapCV: schedule.GapCV(st.Arrival, st.Burstiness),
		Concurrency: st.Concurrency, MaxConcurrency: st.MaxConcurrency, LagBound: st.LagBound,
		Tokenizer: p.Provenance.Tokenizer, Window: window,
	})
	ecfg.Sink = sink{rec: rec, rw: rw, stage: st.Name, obs: p.Observers, redact: p.Redact}
	// faultsOff clears the stage's faults once, on every way out.
	faultsOff := func() error { return nil }
	if st.Faults != nil {
		if err := st.Faults.on(ctx); err != nil {
			return nil, nil, engine.Outcome{}, "", nil, err
		}
		var once sync.Once
		var offErr error
		faultsOff = func() error {
			once.Do(func() { offErr = st.Faults.off(ctx) })
			return offErr
		}
		defer faultsOff()
	}
	stageCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, o := range p.Observers {
		o.StageStart(stageCtx, st, start)
	}
	stopWatch, aborted := watch(stageCtx, cancel, aborts, rec, start)
	stopTriggers := watchTriggers(stageCtx, cancel, trigs, prev, rec, start, st.Warmup)
	stop := progress(p, st, rec, start)
	out, err := engine.Run(stageCtx, ecfg)
	stop()
	stopWatch()
	trigOuts, trigAborted := stopTriggers()
	offErr := faultsOff()
	if out.Start.IsZero() {
		return nil, nil, out, "", nil, err
	}
	rec.Outcome(int(out.Missed), int(out.Abandoned), out.Grace)
	sc, hist, encErr := rec.Scenario(st.Name, out.End)
	if err == nil {
		err = encErr
	}
	sc.StartedAt = sc.StartedAt.UTC()
	sc.Load.RampFrom, sc.Load.Shaped = st.RampFrom, st.Shape
	if st.Warmup > 0 {
		sc.Load.Warmup = st.Warmup.String()
	}
	if sp, ok := st.Pacer.(*schedule.Stampede); ok {
		sc.Load.Stampede = sp.Spec.String()
	}
	for _, o := range p.Observers {
		o.StageEnd(st, &sc)
	}
	if offErr != nil {
		sc.Warnings = append(sc.Warnings, offErr.Error())
	}
	sc.Thresholds = trigOuts
	stopped := aborted()
	if stopped == nil {
		stopped = trigAborted
	}
	return &sc, hist, out, rec.Model(), stopped, err
}

// StagePacer is the open-loop pacer a stage's arrival, rate, ramp, token
// rate or trace make (its Pacer field aside); src is the stage's workload,
// whose requests' tokens a token rate paces by.
func StagePacer(st Stage, seed uint64, src workload.Source) (schedule.Pacer, error) {
	st.Pacer = nil
	return stagePacer(st, seed, src)
}

// stagePacer is the open-loop pacer of a stage: its Pacer, or the one its
// arrival makes; src is the stage's workload, whose requests' tokens a
// token rate paces by.
func stagePacer(st Stage, seed uint64, src workload.Source) (schedule.Pacer, error) {
	if st.Pacer != nil {
		return st.Pacer, nil
	}
	if st.Trace != nil {
		return *st.Trace, nil
	}
	if st.RampFrom > 0 {
		return schedule.NewRamp(st.Arrival, st.RampFrom, st.Rate, st.Warmup+st.Duration, seed)
	}
	if st.TokenRate > 0 {
		return schedule.NewTokenRate(st.Arrival, st.TokenRate, st.Burstiness, seed, func(n uint64) float64 {
			if src == nil {
				return 1 // CheckStage: no workload to read
			}
			r, err := src.Request(n)
			if err != nil {
				return 1 // the engine reports the error when it asks
			}
			return r.PacedTokens
		})
	}
	return schedule.New(st.Arrival, st.Rate, st.Burstiness, seed)
}

// pacedTokens returns src with each request's PacedTokens set to its
// expected tokens (workload.ExpectedTokens).
func pacedTokens(src workload.Source, outputOnly bool) workload.Source {
	return workload.SourceFunc{
		Sha256: src.Digest(),
		F: func(n uint64) (*workload.Request, error) {
			r, err := src.Request(n)
			if err != nil {
				return nil, err
			}
			c := *r
			c.PacedTokens = workload.ExpectedTokens(r, outputOnly)
			return &c, nil
		},
	}
}

// CheckStage reports a stage whose load cannot be paced.
func CheckStage(st Stage) error {
	if st.Concurrency > 0 {
		if st.RampFrom > 0 {
			return fmt.Errorf("a ramp needs an open-loop rate, not a concurrency")
		}
		return nil
	}
	if st.RampFrom > 0 && st.Duration <= 0 {
		return fmt.Errorf("a ramp needs a duration to ramp over")
	}
	if st.Shape && (st.RampFrom > 0 || st.Trace != nil || st.Pacer != nil) {
		return fmt.Errorf("complexity shaping works on a constant, poisson or gamma rate, not a ramp, a trace or stampedes")
	}
	if st.TokenRate > 0 && (st.RampFrom > 0 || st.Trace != nil || st.Arrival == "trace" || st.Rate > 0) {
		return fmt.Errorf("a token rate paces constant, poisson or gamma arrivals by itself: give no rate, ramp or trace with it")
	}
	if st.Trace != nil || st.Arrival == "trace" {
		return nil // the offsets come with the dataset
	}
	_, err := stagePacer(st, 0, nil)
	return err
}

// watch evaluates the abort thresholds once a second, after their delay,
// on the recorder's window, and cancels the stage when one fails. The
// returned stop waits for the watcher; aborted then tells which failed.
func watch(ctx context.Context, cancel context.CancelFunc, aborts []Abort, rec *metrics.Recorder, start time.Time) (stop func(), aborted func() *threshold.Outcome) {
	var failed *threshold.Outcome
	if len(aborts) == 0 {
		return func() {}, func() *threshold.Outcome { return nil }
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				if failed = abortStep(now, start, aborts, rec); failed != nil {
					cancel()
					return
				}
			}
		}
	}()
	return func() { close(done); <-stopped }, func() *threshold.Outcome { return failed }
}

// abortStep evaluates the abort thresholds at now, each past its delay on
// its own window (the last Window of complete seconds; the recorder keeps
// the longest any of the stage's thresholds and triggers needs), and
// returns the first that failed.
func abortStep(now, start time.Time, aborts []Abort, rec *metrics.Recorder) *threshold.Outcome {
	for _, a := range aborts {
		if now.Sub(start) < a.Delay {
			continue
		}
		v, ok := rec.WindowLookup(now, a.Window, a.Threshold.Agg, a.Threshold.Percentile, a.Threshold.Metric)
		if !ok || math.IsNaN(v) {
			continue // nothing in the window yet: no verdict
		}
		if rec.Doubt(a.Threshold.Agg, a.Threshold.LookupName()) != "" {
			continue // it rests on usage that cannot be trusted: no verdict
		}
		if o := a.Threshold.Eval(fixed(v)); !o.Pass {
			o.Expr += " (abortOnFail, last " + a.Window.String() + ")"
			return &o
		}
	}
	return nil
}

// fixed is a threshold.Source with one value.
type fixed float64

func (f fixed) Lookup(string, float64, string) (float64, bool) { return float64(f), true }

// progress calls p.Progress every p.ProgressEvery until the returned func
// is called; that func waits for the ticker's goroutine to stop.
func progress(p Plan, st Stage, rec *metrics.Recorder, start time.Time) func() {
	if p.Progress == nil || p.ProgressEvery <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(p.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				el := now.Sub(start)
				var left time.Duration
				if st.Duration > 0 {
					left = max(0, st.Warmup+st.Duration-el)
				}
				p.Progress(st, el, left, rec.Progress())
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// ProgressLines returns a ProgressFunc that prints one plain line per call
// to w: for logs, CI and terminals that are not interactive.
func ProgressLines(w io.Writer) ProgressFunc {
	return func(st Stage, el, _ time.Duration, pr metrics.Progress) {
		sec := el.Seconds()
		ttft := "ttft -"
		if pr.TTFTp50ms > 0 {
			ttft = fmt.Sprintf("ttft p50 %.0f ms p99 %.0f ms", pr.TTFTp50ms, pr.TTFTp99ms)
		}
		fmt.Fprintf(w, "[%s] %5.0fs  sent %d (%.1f/s)  done %d  in flight %d  errors %d  %s  %.0f tok/s\n",
			st.Name, sec, pr.Sent, float64(pr.Sent)/sec, pr.Completed, pr.InFlight, pr.Failed, ttft, float64(pr.OutputTokens)/sec)
	}
}
