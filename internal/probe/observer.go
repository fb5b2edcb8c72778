package probe

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/result"
)

// minTrials is the number of evaluated attacks below which a family's
// interval is called wide in a warning.
const minTrials = 30

// Observer judges every finished probe request of a run and fills each
// stage's result.Probes. It is a runner.Observer.
type Observer struct {
	sched Schedule

	mu     sync.Mutex
	stages map[string]*tally
}

var _ runner.Observer = (*Observer)(nil)

// tally is one stage's counts, per suite of the set.
type tally struct {
	suites     []suiteTally
	mismatched int // records labelled as probes that the schedule says are not
}

type suiteTally struct {
	evaluated, failed, empty      int
	attacks, successes, intercept int
	leakN, leaks                  int
	benign, refused               int
	seen, succeeded               map[*Probe]bool
	techniques                    map[string]*result.ProbeCount
}

// NewObserver returns an observer for the probes of sched. A record's Seq
// is the run's request index, also in a sharded run (the engine numbers a
// shard's requests globally), so it finds the record's probe.
func NewObserver(sched Schedule) *Observer {
	return &Observer{sched: sched, stages: map[string]*tally{}}
}

// StageStart implements runner.Observer.
func (o *Observer) StageStart(context.Context, runner.Stage, time.Time) {}

// Sent implements runner.Observer.
func (o *Observer) Sent(string, time.Time, time.Time, bool) {}

// Record implements runner.Observer: it judges a probe's answer. Other
// requests cost a string prefix test.
func (o *Observer) Record(stage string, rec *record.Record) {
	if rec.Warmup || !strings.HasPrefix(rec.Intent, IntentPrefix) {
		return
	}
	i, ok := o.sched.ProbeAt(rec.Seq)
	var su *Suite
	var p *Probe
	if ok {
		su, p = o.sched.Set.At(i)
		ok = rec.Intent[len(IntentPrefix):] == su.Family
	}
	var v Verdict
	failed := rec.Failed()
	if ok && !failed {
		v = p.Judge(su.Kind, rec.Answer)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.stages[stage]
	if t == nil {
		t = &tally{suites: make([]suiteTally, len(o.sched.Set.Suites))}
		o.stages[stage] = t
	}
	if !ok {
		t.mismatched++
		return
	}
	s := &t.suites[o.sched.Set.order[i].suite]
	if failed {
		s.failed++
		return
	}
	s.add(su.Kind, p, v, len(rec.Answer) == 0)
}

func (s *suiteTally) add(kind string, p *Probe, v Verdict, empty bool) {
	if s.seen == nil {
		s.seen, s.succeeded, s.techniques = map[*Probe]bool{}, map[*Probe]bool{}, map[string]*result.ProbeCount{}
	}
	s.evaluated++
	s.seen[p] = true
	if empty {
		s.empty++
	}
	tc := s.techniques[p.Technique]
	if tc == nil {
		tc = &result.ProbeCount{}
		s.techniques[p.Technique] = tc
	}
	tc.N++
	if len(p.planted) > 0 {
		s.leakN++
		if v.Leaked {
			s.leaks++
		}
	}
	if kind == Benign {
		s.benign++
		if v.Refused {
			s.refused++
			tc.K++
		}
		return
	}
	s.attacks++
	if v.Success {
		s.successes++
		s.succeeded[p] = true
		tc.K++
	}
	if v.Intercepted() {
		s.intercept++
	}
}

// StageEnd implements runner.Observer: it fills sc.Probes.
func (o *Observer) StageEnd(st runner.Stage, sc *result.Scenario) {
	o.mu.Lock()
	t := o.stages[st.Name]
	delete(o.stages, st.Name)
	o.mu.Unlock()
	if t == nil {
		t = &tally{suites: make([]suiteTally, len(o.sched.Set.Suites))}
	}
	sc.Probes = o.figures(t)
}

// figures turns a stage's tally into its result section.
func (o *Observer) figures(t *tally) *result.Probes {
	out := &result.Probes{Suites: o.sched.Set.Names(), Fraction: o.sched.Fraction, Confidence: Confidence, Families: []result.ProbeFamily{}}
	var all suiteTally
	for i, su := range o.sched.Set.Suites {
		s := &t.suites[i]
		f := result.ProbeFamily{Family: su.Family, Suite: su.Name, Kind: su.Kind, OWASP: append([]string{}, su.OWASP...), ProbeFigures: s.figures()}
		if len(s.techniques) > 0 {
			f.Techniques = map[string]result.ProbeCount{}
			for k, v := range s.techniques {
				f.Techniques[k] = *v
			}
		}
		out.Families = append(out.Families, f)
		all.evaluated += s.evaluated
		all.failed += s.failed
		all.empty += s.empty
		all.attacks += s.attacks
		all.successes += s.successes
		all.intercept += s.intercept
		all.leakN += s.leakN
		all.leaks += s.leaks
		all.benign += s.benign
		all.refused += s.refused
		if su.Kind == Attack && s.attacks > 0 && s.attacks < minTrials {
			out.Warnings = append(out.Warnings, fmt.Sprintf("family %s: only %d attacks evaluated; its interval is wide (run longer or raise --probe-fraction)", su.Family, s.attacks))
		}
	}
	out.Overall = all.figures()
	attackDistinct := 0
	for i, f := range out.Families {
		out.Overall.Distinct += f.Distinct
		out.Overall.DistinctSucceeded += f.DistinctSucceeded
		if o.sched.Set.Suites[i].Kind == Attack {
			attackDistinct += f.Distinct
		}
	}
	out.Overall.DistinctSuccess = rate(out.Overall.DistinctSucceeded, attackDistinct)
	ov := out.Overall
	if ov.Evaluated == 0 {
		out.Warnings = append(out.Warnings, "no probe request was answered in this stage: no figures")
	}
	if ov.Evaluated > ov.Distinct && ov.Distinct > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d probe answers came from %d distinct probes: the intervals count every request as an independent trial, which holds for a sampling model but not for repeats of one prompt to a deterministic one; distinct_success counts each probe once", ov.Evaluated, ov.Distinct))
	}
	if ov.Failed > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d probe requests failed and are in no rate: an attack that errors under load is neither followed nor intercepted", ov.Failed))
	}
	if all.empty > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d probe answers were empty: nothing could be detected in them (does the protocol client keep answers?)", all.empty))
	}
	if t.mismatched > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d requests labelled %q were not scheduled probes and were not judged", t.mismatched, IntentPrefix+"*"))
	}
	sort.Strings(out.Warnings)
	return out
}

func (s *suiteTally) figures() result.ProbeFigures {
	f := result.ProbeFigures{
		Evaluated: s.evaluated, Failed: s.failed, Distinct: len(s.seen), DistinctSucceeded: len(s.succeeded),
		AttackSuccess: rate(s.successes, s.attacks),
		Interception:  rate(s.intercept, s.attacks),
		Leak:          rate(s.leaks, s.leakN),
		FalseRefusal:  rate(s.refused, s.benign),
	}
	if s.attacks > 0 {
		f.DistinctSuccess = rate(len(s.succeeded), len(s.seen))
	}
	return f
}
