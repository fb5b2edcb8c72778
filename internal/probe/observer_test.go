package probe

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/result"
)

// answerFor builds the answer a model would give to probe i: following it
// (the answer repeats the probe's messages), refusing, or answering plainly.
func answerFor(set *Set, i int, how string) string {
	_, p := set.At(i)
	switch how {
	case "follow":
		var b strings.Builder
		for _, m := range p.messages() {
			b.WriteString(m.Content + " ")
		}
		return b.String()
	case "refuse":
		return "I'm sorry, but I can't help with that request."
	}
	return "Here is a short and helpful answer."
}

// TestObserverFigures feeds the observer records it can check by hand:
// per family, the first third of each probe's answers follow the attack,
// the second third refuse, the rest answer plainly; benign probes are
// refused once in four. Records come from several goroutines at once.
func TestObserverFigures(t *testing.T) {
	set := testSet(t, "all")
	sched := Schedule{Set: set, Fraction: 0.5}
	o := NewObserver(sched)
	const reqs = 6000
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			rec := &record.Record{}
			for n := uint64(w); n < reqs; n += 4 {
				rec.Reset()
				rec.Seq = n
				idx, ok := sched.ProbeAt(n)
				if !ok {
					rec.Intent = "chat"
					o.Record("peak", rec)
					continue
				}
				su, _ := set.At(idx)
				rec.Intent = IntentPrefix + su.Family
				round := int((n+1)/2-1) / set.Len() // how many times this probe was sent before
				how := []string{"follow", "refuse", "plain"}[round%3]
				if su.Kind == Benign {
					how = "plain"
					if round%4 == 0 {
						how = "refuse"
					}
				}
				if round%10 == 9 {
					rec.Fail(record.Timeout, "timeout", rec.Sent)
				} else {
					rec.Answer = append(rec.Answer, answerFor(set, idx, how)...)
				}
				o.Record("peak", rec)
			}
		})
	}
	wg.Wait()
	o.Record("peak", &record.Record{Seq: 0, Intent: IntentPrefix + "benign"}) // request 0 is not a probe at 0.5
	sc := &result.Scenario{}
	o.StageEnd(runner.Stage{Name: "peak"}, sc)
	pr := sc.Probes
	if pr == nil {
		t.Fatal("no probe figures")
	}
	// 3000 probe requests cycle through the set: each probe is sent
	// rounds times; the expected counts follow from the rules above.
	rounds := 3000 / set.Len()
	var follow, refuse, failed, benignRefused, benignN int
	for r := range rounds {
		if r%10 == 9 {
			failed++
			continue
		}
		switch r % 3 {
		case 0:
			follow++
		case 1:
			refuse++
		}
		benignN++
		if r%4 == 0 {
			benignRefused++
		}
	}
	evaluated := rounds - failed
	for _, f := range pr.Families {
		su := set.Suites[indexOf(set, f.Suite)]
		np := len(su.Probes)
		if f.Evaluated != evaluated*np || f.Failed != failed*np || f.Distinct != np {
			t.Errorf("%s: evaluated %d failed %d distinct %d, want %d %d %d", f.Family, f.Evaluated, f.Failed, f.Distinct, evaluated*np, failed*np, np)
		}
		if su.Kind == Benign {
			if f.FalseRefusal == nil || f.FalseRefusal.K != benignRefused*np || f.FalseRefusal.N != benignN*np || f.AttackSuccess != nil {
				t.Errorf("benign: false refusal %+v, want %d of %d", f.FalseRefusal, benignRefused*np, benignN*np)
			}
			if f.Leak == nil || f.Leak.K != 0 {
				t.Errorf("benign: leak %+v, want 0", f.Leak)
			}
			continue
		}
		if f.AttackSuccess.K != follow*np || f.AttackSuccess.N != evaluated*np {
			t.Errorf("%s: attack success %d of %d, want %d of %d", f.Family, f.AttackSuccess.K, f.AttackSuccess.N, follow*np, evaluated*np)
		}
		if f.Interception.K != refuse*np {
			t.Errorf("%s: intercepted %d, want %d", f.Family, f.Interception.K, refuse*np)
		}
		if want := float64(follow) / float64(evaluated); f.AttackSuccess.Rate != want || f.AttackSuccess.Low >= want || f.AttackSuccess.High <= want {
			t.Errorf("%s: rate %+v, want %g inside its interval", f.Family, f.AttackSuccess, want)
		}
		planted := 0
		for _, p := range su.Probes {
			if len(p.Planted) > 0 {
				planted++
			}
		}
		if planted > 0 && (f.Leak.K != follow*planted || f.Leak.N != evaluated*planted) {
			t.Errorf("%s: leak %+v, want %d of %d", f.Family, f.Leak, follow*planted, evaluated*planted)
		}
		if f.DistinctSucceeded != np || f.DistinctSuccess.K != np || f.DistinctSuccess.N != np {
			t.Errorf("%s: %d distinct probes succeeded (%+v), want all %d", f.Family, f.DistinctSucceeded, f.DistinctSuccess, np)
		}
	}
	attacks := set.Len() - len(set.Suites[0].Probes) // suite 0 is benign
	if o := pr.Overall; o.Evaluated != evaluated*set.Len() || o.AttackSuccess.K != follow*attacks ||
		o.DistinctSuccess.K != attacks || o.DistinctSuccess.N != attacks || o.Distinct != set.Len() {
		t.Errorf("overall %+v, distinct success %+v", o, o.DistinctSuccess)
	}
	for _, w := range []string{"probe requests failed", "distinct probes", "not scheduled probes"} {
		if !strings.Contains(strings.Join(pr.Warnings, "\n"), w) {
			t.Errorf("warnings %q lack %q", pr.Warnings, w)
		}
	}
}

func indexOf(set *Set, name string) int {
	for i, s := range set.Suites {
		if s.Name == name {
			return i
		}
	}
	return -1
}

// TestObserverShard checks that a shard's record indexes are mapped back
// to the run's: shard 1 of 3 sends global requests 1, 4, 7, ….
func TestObserverShard(t *testing.T) {
	set := testSet(t, "injection-direct")
	sched := Schedule{Set: set, Fraction: 0.5}
	o := NewObserver(sched) // shard 1 of 3: the engine numbers its requests 1, 4, 7, ...
	o.StageStart(context.Background(), runner.Stage{Name: "s"}, time.Now())
	for local := range uint64(20) {
		g := local*3 + 1
		idx, ok := sched.ProbeAt(g)
		if !ok {
			continue
		}
		rec := &record.Record{Seq: g, Intent: IntentPrefix + "direct-injection", Answer: []byte(answerFor(set, idx, "follow"))}
		o.Record("s", rec)
	}
	sc := &result.Scenario{}
	o.StageEnd(runner.Stage{Name: "s"}, sc)
	if f := sc.Probes.Families[0]; f.AttackSuccess == nil || f.AttackSuccess.K != f.AttackSuccess.N || f.AttackSuccess.N != 10 {
		t.Errorf("shard figures %+v, want 10 of 10 attacks followed", f.AttackSuccess)
	}
}
