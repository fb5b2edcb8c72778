// Package merge combines the results of a sharded run (spate run --shard
// I/N on N machines) into the one result a single process sending the
// whole load would have written: histograms are added bucket by bucket and
// every percentile is recomputed from them (never averaged), counters and
// token counts are summed, per-second series are aligned by wall clock,
// and the thresholds are evaluated again on the merged figures.
//
// Stage: outputs (shards' results merged into one).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package merge

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/verdict"
	"github.com/spate-dev/spate/internal/verdict/threshold"
	"github.com/spate-dev/spate/result"
)

// DefaultMaxClockSpread is the clock disagreement between shards above
// which a merge warns (Options.MaxClockSpread).
const DefaultMaxClockSpread = 100 * time.Millisecond

// MaxStartSpread is the most a stage's start may differ between shards:
// further apart, they are not one run (and their series would not overlap).
const MaxStartSpread = time.Hour

// Input is one shard's result and the name it is known by (its file).
type Input struct {
	Name   string
	Result *result.Result
}

// Options tune a merge.
type Options struct {
	// Force merges shards that disagree on the experiment, the shard count
	// or the fingerprint, and shard indexes given twice, instead of
	// refusing; the merged result says so (Shard.Forced) and warns.
	Force bool
	// MaxClockSpread is how far the shards' clock offsets may provably
	// disagree before the merge warns (0: DefaultMaxClockSpread).
	MaxClockSpread time.Duration
	// AllowPartial merges an incomplete set of shards instead of refusing
	// it: missing shards are merged around (Shard.Missing) and a shard
	// index given more than once is merged once, from its first input
	// (Shard.Duplicates), each with a warning.
	AllowPartial bool
}

// Merge combines shard results into one. It refuses, unless opt.Force,
// inputs that are not shards of one run (different experiment, count or
// fingerprint), and, unless opt.AllowPartial (or opt.Force for
// duplicates), a set with a shard missing or given twice.
func Merge(in []Input, opt Options) (*result.Result, error) {
	if len(in) == 0 {
		return nil, errors.New("merging: no shard results given")
	}
	if opt.MaxClockSpread <= 0 {
		opt.MaxClockSpread = DefaultMaxClockSpread
	}
	var warns []string
	problems, err := checkInputs(in)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		if !opt.Force {
			return nil, fmt.Errorf("these results are not shards of one run:\n  %s\n(merge them anyway with --force)", strings.Join(problems, "\n  "))
		}
		for _, p := range problems {
			warns = append(warns, "forced: "+p)
		}
	}
	first := in[0].Result
	count := first.Shard.Count
	sh := &result.Shard{Index: -1, Count: count, Experiment: first.Shard.Experiment, Forced: opt.Force && len(problems) > 0}
	seen := map[int]int{}
	for _, x := range in {
		seen[x.Result.Shard.Index]++
	}
	for i := range count {
		if seen[i] == 0 {
			sh.Missing = append(sh.Missing, i)
		}
	}
	for i, k := range seen {
		if k > 1 {
			sh.Duplicates = append(sh.Duplicates, i)
		}
	}
	for _, x := range in {
		sh.Merged = append(sh.Merged, x.Result.Shard.Index)
	}
	slices.Sort(sh.Merged)
	slices.Sort(sh.Duplicates)
	switch {
	case len(sh.Duplicates) == 0:
	case opt.Force:
		sh.Forced = true
		warns = append(warns, fmt.Sprintf("forced: shard index(es) %s merged more than once: their requests are counted twice", ints(sh.Duplicates)))
	case opt.AllowPartial:
		in = firstOfEach(in)
		sh.Merged = sh.Merged[:0]
		for _, x := range in {
			sh.Merged = append(sh.Merged, x.Result.Shard.Index)
		}
		slices.Sort(sh.Merged)
		warns = append(warns, fmt.Sprintf("shard index(es) %s given more than once: merged once each, from the first file given", ints(sh.Duplicates)))
	default:
		return nil, fmt.Errorf("shard index(es) %s given more than once: merging them would count their requests twice (merge each once with --allow-partial, or count them twice with --force)", ints(sh.Duplicates))
	}
	if len(sh.Missing) > 0 {
		if !opt.AllowPartial {
			return nil, fmt.Errorf("shard(s) %s of %d missing: the merged result would hold only part of the load (merge the shards given with --allow-partial)", ints(sh.Missing), count)
		}
		warns = append(warns, fmt.Sprintf("shard(s) %s of %d missing: the merged result holds only part of the load", ints(sh.Missing), count))
	}
	if w, spread := clockSpread(in, opt.MaxClockSpread); spread != nil {
		sh.ClockSpreadMS = spread
		if w != "" {
			warns = append(warns, w)
		}
	}

	out := &result.Result{
		Schema:       result.Schema,
		SpateVersion: first.SpateVersion,
		StartedAt:    first.StartedAt,
		EndedAt:      first.EndedAt,
		Fingerprint:  first.Fingerprint,
		Provenance:   first.Provenance,
		Config:       first.Config,
		Scenarios:    []result.Scenario{},
		Histograms:   map[string]map[string]string{},
		Shard:        sh,
	}
	var aborted []string
	for _, x := range in {
		r := x.Result
		if r.StartedAt.Before(out.StartedAt) {
			out.StartedAt = r.StartedAt
		}
		if r.EndedAt.After(out.EndedAt) {
			out.EndedAt = r.EndedAt
		}
		out.Interrupted = out.Interrupted || r.Interrupted
		if r.Aborted != "" {
			aborted = append(aborted, fmt.Sprintf("shard %d: %s", r.Shard.Index, r.Aborted))
		}
		for _, w := range r.Warnings {
			warns = append(warns, fmt.Sprintf("shard %d: %s", r.Shard.Index, w))
		}
	}
	out.Aborted = strings.Join(aborted, "; ")

	ths, err := thresholds(first.Config.Thresholds)
	if err != nil {
		return nil, err
	}
	out.ThresholdsPassed = len(aborted) == 0
	for _, name := range scenarioNames(in) {
		sc, hist, err := mergeScenario(name, in)
		if err != nil {
			return nil, err
		}
		// As the shards' own runs judge them: from the intended send
		// time in an open loop.
		outs, pass := threshold.EvalStage(ths, name, sc.Load.Mode == "open", first.Config.SLOFrom == "sent", metrics.Source{Scenario: sc, Hists: hist})
		trig, trigPass := triggers(first.Config.Thresholds, name, in)
		outs, pass = append(outs, trig...), pass && trigPass
		sc.Thresholds = outs
		if sc.Thresholds == nil {
			sc.Thresholds = []threshold.Outcome{}
		}
		out.ThresholdsPassed = out.ThresholdsPassed && pass
		out.Scenarios = append(out.Scenarios, *sc)
		out.Histograms[name] = hist
	}
	out.Warnings = warns
	return out, nil
}

// checkInputs lists why the inputs are not shards of one run; it errs on
// an input that is not a shard result at all.
func checkInputs(in []Input) ([]string, error) {
	first := in[0]
	for _, x := range in {
		if x.Result == nil {
			return nil, fmt.Errorf("merging %s: no result", x.Name)
		}
		if x.Result.Shard == nil {
			return nil, fmt.Errorf("merging %s: not a shard result (it has no shard section): run each shard with spate run --shard I/N", x.Name)
		}
		if x.Result.Shard.Index < 0 {
			return nil, fmt.Errorf("merging %s: already a merged result, not a shard", x.Name)
		}
	}
	var problems []string
	for _, x := range in {
		r, s := x.Result, x.Result.Shard
		if s.Index >= s.Count {
			problems = append(problems, fmt.Sprintf("%s: shard index %d is not below its count %d", x.Name, s.Index, s.Count))
		}
		if got := Experiment(r, s.Count); got != s.Experiment {
			problems = append(problems, fmt.Sprintf("%s: its settings do not match the experiment id it was run with (edited, or written by another spate version)", x.Name))
		}
		if x.Name == first.Name && r == first.Result {
			continue
		}
		f := first.Result
		if s.Count != f.Shard.Count {
			problems = append(problems, fmt.Sprintf("%s is shard of %d, %s of %d", x.Name, s.Count, first.Name, f.Shard.Count))
		}
		if r.Fingerprint != f.Fingerprint {
			problems = append(problems, fmt.Sprintf("fingerprint %s (%s) differs from %s (%s): model, SUT version or workload differ", r.Fingerprint, x.Name, f.Fingerprint, first.Name))
		}
		if !sameConfig(r.Config, f.Config) {
			problems = append(problems, fmt.Sprintf("%s and %s were run with different load settings (config)", x.Name, first.Name))
		}
		if r.Provenance.ExperimentSHA256 != f.Provenance.ExperimentSHA256 {
			problems = append(problems, fmt.Sprintf("%s and %s were run from different experiment files", x.Name, first.Name))
		}
		if s.Experiment != f.Shard.Experiment {
			problems = append(problems, fmt.Sprintf("%s and %s belong to different experiments (shard.experiment %.12s… vs %.12s…)", x.Name, first.Name, s.Experiment, f.Shard.Experiment))
		}
	}
	return problems, nil
}

// sameConfig compares load settings, leaving out the experiment file's
// path (its digest is compared on its own).
func sameConfig(a, b result.Config) bool {
	a.Experiment, b.Experiment = "", ""
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// clockSpread reports the spread of the shards' clock offsets, and a
// warning when they provably disagree by more than bound: when even the
// closest ends of their uncertainty intervals are further apart.
func clockSpread(in []Input, bound time.Duration) (string, *float64) {
	var lo, hi *result.ClockOffset
	var loName, hiName string
	without := 0
	for _, x := range in {
		c := x.Result.Shard.Clock
		if c == nil {
			without++
			continue
		}
		if lo == nil || c.OffsetMS < lo.OffsetMS {
			lo, loName = c, x.Name
		}
		if hi == nil || c.OffsetMS > hi.OffsetMS {
			hi, hiName = c, x.Name
		}
	}
	if lo == nil {
		return "", nil
	}
	spread := hi.OffsetMS - lo.OffsetMS
	var w string
	gap := (hi.OffsetMS - hi.UncertaintyMS) - (lo.OffsetMS + lo.UncertaintyMS)
	if b := float64(bound) / float64(time.Millisecond); gap > b {
		w = fmt.Sprintf("shards' clocks disagree: %s is %.1f ± %.1f ms off the target's clock, %s %.1f ± %.1f ms (more than %.0f ms apart): their start times and per-second series are misaligned by about %.0f ms",
			hiName, hi.OffsetMS, hi.UncertaintyMS, loName, lo.OffsetMS, lo.UncertaintyMS, b, spread)
	}
	if without > 0 {
		if w != "" {
			w += "; "
		}
		w += fmt.Sprintf("%d shard(s) have no clock offset estimate", without)
	}
	return w, &spread
}

// scenarioNames lists the scenarios of all inputs, in the first input's
// order, then any the first lacks.
func scenarioNames(in []Input) []string {
	var names []string
	for _, x := range in {
		for _, sc := range x.Result.Scenarios {
			if !slices.Contains(names, sc.Name) {
				names = append(names, sc.Name)
			}
		}
	}
	return names
}

// part is one shard's scenario.
type part struct {
	shard int
	sc    *result.Scenario
	hist  map[string]string
}

// mergeScenario merges the scenario called name of every input that has it.
func mergeScenario(name string, in []Input) (*result.Scenario, map[string]string, error) {
	var parts []part
	var lacking []int
	for _, x := range in {
		r := x.Result
		i := slices.IndexFunc(r.Scenarios, func(sc result.Scenario) bool { return sc.Name == name })
		if i < 0 {
			lacking = append(lacking, r.Shard.Index)
			continue
		}
		parts = append(parts, part{shard: r.Shard.Index, sc: &r.Scenarios[i], hist: r.Histograms[name]})
	}
	f := parts[0].sc
	sc := &result.Scenario{
		Name: name, StartedAt: f.StartedAt, Metrics: map[string]result.Dist{},
		Requests: result.Requests{Errors: map[string]int{}},
		Goodput:  result.Goodput{SLOms: f.Goodput.SLOms},
	}
	if len(lacking) > 0 {
		sc.Warnings = append(sc.Warnings, fmt.Sprintf("shard(s) %s did not run this stage: it holds only the other shards' load", ints(lacking)))
	}
	end := f.StartedAt
	var hists []map[string]string
	var series []seriesPart
	var good, goodIntended, done float64
	var dropped []string
	var outputs []*result.Output
	var invalid []string
	var reads result.Validity // the shards' late-read counts, added up
	var errs result.MeasurementError
	errs.Figures = map[string]result.FigureError{}
	var goodLo, goodHi, goodIntLo, goodIntHi float64
	sc.Load = result.Load{Mode: f.Load.Mode, Arrival: f.Load.Arrival, Warmup: f.Load.Warmup, LagBoundMS: f.Load.LagBoundMS, Valid: true}
	for _, p := range parts {
		s := p.sc
		if s.StartedAt.Before(sc.StartedAt) {
			sc.StartedAt = s.StartedAt
		}
		if e := s.StartedAt.Add(time.Duration(s.DurationS * float64(time.Second))); e.After(end) {
			end = e
		}
		hists = append(hists, p.hist)
		series = append(series, seriesPart{start: s.StartedAt, s: s.Series})
		addRequests(&sc.Requests, s.Requests)
		addTokens(&sc.Tokens, s.Tokens)
		sc.Throughput.RequestsPerS += s.Throughput.RequestsPerS
		sc.Throughput.InputTokensPerS += s.Throughput.InputTokensPerS
		sc.Throughput.OutputTokensPerS += s.Throughput.OutputTokensPerS
		sc.Throughput.TotalTokensPerS += s.Throughput.TotalTokensPerS
		sc.Throughput.STPS += s.Throughput.STPS
		n := float64(s.Requests.Succeeded + s.Requests.Failed)
		good += math.Round(s.Goodput.Fraction * n)
		goodIntended += math.Round(s.Goodput.IntendedFraction * n)
		done += n
		if me := s.MeasurementError; me != nil {
			for k, fe := range me.Figures {
				m := errs.Figures[k]
				m.Late += fe.Late
				m.BoundMS = max(m.BoundMS, fe.BoundMS)
				m.HighOnly = fe.HighOnly
				errs.Figures[k] = m
			}
			goodLo += math.Round(me.Goodput.Low * n)
			goodHi += math.Round(me.Goodput.High * n)
			goodIntLo += math.Round(me.GoodputIntended.Low * n)
			goodIntHi += math.Round(me.GoodputIntended.High * n)
		} else {
			goodLo += math.Round(s.Goodput.Fraction * n)
			goodHi += math.Round(s.Goodput.Fraction * n)
			goodIntLo += math.Round(s.Goodput.IntendedFraction * n)
			goodIntHi += math.Round(s.Goodput.IntendedFraction * n)
		}
		sc.Goodput.RequestsPerS += s.Goodput.RequestsPerS
		sc.Goodput.IntendedRequestsPerS += s.Goodput.IntendedRequestsPerS
		l := s.Load
		sc.Load.TargetRate += l.TargetRate
		sc.Load.TargetTokenRate += l.TargetTokenRate
		sc.Load.AchievedTokenRate += l.AchievedTokenRate
		sc.Load.TokenRateBasis = l.TokenRateBasis
		sc.Load.RampFrom += l.RampFrom
		sc.Load.ScheduledRate += l.ScheduledRate
		sc.Load.AchievedRate += l.AchievedRate
		sc.Load.Concurrency += l.Concurrency
		sc.Load.MaxConcurrency += l.MaxConcurrency
		sc.Load.LagBoundMS = max(sc.Load.LagBoundMS, l.LagBoundMS)
		if !l.Valid {
			sc.Load.Valid = false
			if sc.Load.InvalidCause == "" || l.InvalidCause == verdict.CauseNotApplied {
				sc.Load.InvalidCause = l.InvalidCause // no --allow-invalid accepts that one: it wins
			}
			invalid = append(invalid, fmt.Sprintf("shard %d: %s", p.shard, l.InvalidReason))
		}
		if v := l.Validity; v != nil {
			reads.Events += v.Events
			reads.LateEvents += v.LateEvents
			reads.FirstTokens += v.FirstTokens
			reads.LateFirstTokens += v.LateFirstTokens
			reads.Gaps += v.Gaps
			reads.LateGaps += v.LateGaps
		}
		for _, w := range s.Warnings {
			sc.Warnings = append(sc.Warnings, fmt.Sprintf("shard %d: %s", p.shard, w))
		}
		dropped = append(dropped, sections(s)...)
		outputs = append(outputs, s.Output)
	}
	for _, p := range parts {
		if d := p.sc.StartedAt.Sub(sc.StartedAt); d > MaxStartSpread {
			return nil, nil, fmt.Errorf("merging stage %s: shard %d started it %s after another shard, more than %s: these are not shards of one run", name, p.shard, d.Round(time.Second), MaxStartSpread)
		}
	}
	sc.DurationS = end.Sub(sc.StartedAt).Seconds()
	if done > 0 {
		sc.Goodput.Fraction, sc.Goodput.IntendedFraction = good/done, goodIntended/done
	}
	sc.Tokens.OutputSource = outputSource(sc.Tokens)
	sc.Tokens.Tokenizer = f.Tokens.Tokenizer

	merged, err := mergeHists(hists)
	if err != nil {
		return nil, nil, fmt.Errorf("merging stage %s: %w", name, err)
	}
	for k, h := range merged {
		if strings.Contains(k, "/") {
			continue // a feature's histograms (by input length): merged, not summarised here
		}
		d := metrics.Summarize(h, scaleOf(k))
		switch k {
		case metrics.ScheduleLag:
			sc.Load.ScheduleLagMS = d
		case metrics.SlotWait:
			sc.Load.SlotWaitMS = d
		case metrics.SendDelay:
			sc.Load.SendDelayMS = d
		case metrics.ReadLag:
			sc.Load.ReadLagMS = &d
		case metrics.TTFTEarly: // judged below
		default:
			if metrics.IsPhase(k) {
				metrics.SetPhase(&sc.Load, k, d)
				continue
			}
			if metrics.IsEarly(k) {
				continue // the measurement error's (below)
			}
			sc.Metrics[k] = d
		}
	}
	// The late reads' shares and TTFT's shift are worked out again on the
	// whole load (late first tokens each too few to move a shard's TTFT
	// can move the merged one); they are for reading: the measurement
	// error below is what verdicts are judged with.
	if t, e := merged[metrics.TTFT], merged[metrics.TTFTEarly]; reads.LateFirstTokens > 0 && t != nil && e != nil && t.TotalCount() == e.TotalCount() {
		reads.TTFTShiftMS, reads.TTFTShiftAt = metrics.TTFTShift(metrics.Summarize(t, scaleOf(metrics.TTFT)), metrics.Summarize(e, scaleOf(metrics.TTFTEarly)))
	}
	metrics.LateReadShares(&sc.Load, &reads)
	sc.Load.InvalidReason = strings.Join(invalid, "; ")
	if o, ok := metrics.MergeOutput(outputs, merged); ok {
		sc.Output = o
		dropped = slices.DeleteFunc(dropped, func(s string) bool { return s == "output" })
	}
	enc, err := encodeHists(merged)
	if err != nil {
		return nil, nil, fmt.Errorf("merging stage %s: %w", name, err)
	}
	if done > 0 {
		errs.Goodput = result.Range{Low: goodLo / done, High: goodHi / done}
		errs.GoodputIntended = result.Range{Low: goodIntLo / done, High: goodIntHi / done}
	}
	if len(errs.Figures) > 0 || goodLo != goodHi || goodIntLo != goodIntHi {
		for k, fe := range errs.Figures {
			fe.Count = sc.Metrics[k].Count
			errs.Figures[k] = fe
		}
		sc.MeasurementError = &errs
		metrics.FillErrorRanges(sc.MeasurementError, sc, enc)
	}
	metrics.FillIntervals(sc, enc)
	var skew time.Duration
	sc.Series, skew = mergeSeries(series, sc.StartedAt)
	if len(parts) > 1 {
		sc.Warnings = append(sc.Warnings, seriesNote)
		sc.Warnings = append(sc.Warnings, "rates (throughput, goodput, achieved) are sums of the shards' rates, each over its own window: exact when the windows coincide")
	}
	if skew > 50*time.Millisecond {
		sc.Warnings = append(sc.Warnings, fmt.Sprintf("shards started up to %.0f ms off a common second: their per-second series are misplaced by up to that much (use --start-at)", float64(skew)/float64(time.Millisecond)))
	}
	if len(dropped) > 0 {
		slices.Sort(dropped)
		sc.Warnings = append(sc.Warnings, fmt.Sprintf("not merged (see the shards' results): %s", strings.Join(slices.Compact(dropped), ", ")))
	}
	// The usage check's counts add up: the merged stage is judged on
	// every shard's responses counted both ways.
	if w := metrics.JudgeUsage(&sc.Tokens, sc.Tokens.DiscrepancySampled); w != "" {
		sc.Warnings = append(sc.Warnings, w)
	}
	if sc.Tokens.DiscrepancySampled > 0 {
		sc.Warnings = append(sc.Warnings, "usage/tokenizer discrepancy is not merged: see the shards' results")
		sc.Tokens.DiscrepancySampled = 0
	}
	return sc, enc, nil
}

func addRequests(to *result.Requests, r result.Requests) {
	to.Total += r.Total
	to.Succeeded += r.Succeeded
	to.Failed += r.Failed
	to.Cancelled += r.Cancelled
	to.Warmup += r.Warmup
	for k, v := range r.Errors {
		to.Errors[k] += v
	}
	for k, v := range r.ErrorSamples {
		if to.ErrorSamples == nil {
			to.ErrorSamples = map[string]string{}
		}
		if _, ok := to.ErrorSamples[k]; !ok {
			to.ErrorSamples[k] = v
		}
	}
}

func addTokens(to *result.Tokens, t result.Tokens) {
	to.Input += t.Input
	to.Output += t.Output
	to.FromUsage += t.FromUsage
	to.FromTokenizer += t.FromTokenizer
	to.DiscrepancySampled += t.DiscrepancySampled
	to.UsageImplausible += t.UsageImplausible
	to.UsageClaimed += t.UsageClaimed
	to.UsageCounted += t.UsageCounted
}

// outputSource says where the merged output token counts came from, as
// the recorder does for one process.
func outputSource(t result.Tokens) string {
	switch {
	case t.FromUsage > 0 && t.FromTokenizer > 0:
		return "mixed"
	case t.FromUsage > 0:
		return "usage"
	case t.FromTokenizer > 0:
		return "tokenizer"
	}
	return "none"
}

// sections names the feature sections of a scenario this merge does not
// combine.
func sections(sc *result.Scenario) []string {
	var out []string
	add := func(present bool, name string) {
		if present {
			out = append(out, name)
		}
	}
	add(len(sc.Breakdown) > 0, "breakdown")
	add(sc.Checks != nil, "checks")
	add(sc.Server != nil, "server")
	add(sc.Resilience != nil, "resilience")
	add(sc.Chaos != nil, "chaos")
	add(sc.Vector != nil, "vector")
	add(sc.Workflow != nil, "workflow")
	add(sc.Probes != nil, "probes")
	add(sc.Output != nil, "output")
	add(sc.ICE != nil, "ice")
	return out
}

// thresholds parses the run's threshold expressions again.
func thresholds(exprs []string) ([]threshold.Threshold, error) {
	var out []threshold.Threshold
	for _, e := range exprs {
		if threshold.IsTrigger(e) {
			continue // judged while each shard ran: see triggers
		}
		t, err := threshold.Parse(e)
		if err != nil {
			return nil, fmt.Errorf("re-reading threshold %q from the shards' config: %w", e, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// triggers are the merged verdicts of the run's triggers on a stage. A
// trigger is watched while a run goes on, on each shard's part of the load,
// so a merge cannot watch it again: it failed when it fired on any shard;
// when none fired the merge cannot judge the whole load (a trigger on the
// merged figures could have fired), and says so.
func triggers(exprs []string, stage string, in []Input) ([]threshold.Outcome, bool) {
	var outs []threshold.Outcome
	pass := true
	for _, e := range exprs {
		if !threshold.IsTrigger(e) {
			continue
		}
		tr, err := threshold.ParseTrigger(e)
		if err != nil || (tr.Stage != "" && tr.Stage != stage) {
			continue
		}
		o := threshold.Outcome{Expr: tr.Expr, Trigger: true}
		var fired []string
		for _, x := range in {
			for _, sc := range x.Result.Scenarios {
				if sc.Name != stage {
					continue
				}
				for _, t := range sc.Thresholds {
					if t.Trigger && t.Expr == tr.Expr && t.Fired > 0 {
						o.Fired += t.Fired
						if o.FiredAtS == nil || (t.FiredAtS != nil && *t.FiredAtS < *o.FiredAtS) {
							o.FiredAtS, o.Value = t.FiredAtS, t.Value
						}
						fired = append(fired, fmt.Sprint(x.Result.Shard.Index))
					}
				}
			}
		}
		if len(fired) == 0 {
			o.Err = "a trigger is watched while each shard runs, on its part of the load: no shard's fired, but the merged load was not watched as a whole (see the shards' results)"
			o.Unjudged = true
		}
		pass = false // fired, or no verdict on the whole load
		outs = append(outs, o)
	}
	return outs, pass
}

func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// firstOfEach keeps the first input of each shard index, in order.
func firstOfEach(in []Input) []Input {
	seen := map[int]bool{}
	var out []Input
	for _, x := range in {
		if !seen[x.Result.Shard.Index] {
			seen[x.Result.Shard.Index] = true
			out = append(out, x)
		}
	}
	return out
}
