package probe_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/probe"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/internal/workload/tokenizer"
	"github.com/spate-dev/spate/result"
	"github.com/spate-dev/spate/sim"
)

// startSim serves the simulator (instant answers of 100 tokens: room for
// the longest probe's messages repeated) on loopback until the test ends.
func startSim(t *testing.T, vulnerability float64) (*sim.Server, string) {
	t.Helper()
	cfg := sim.Deterministic(0, 0, 100)
	cfg.Seed = 7
	cfg.Faults.Vulnerability = vulnerability
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := sim.Serve(ctx, ln, s); err != nil && !errors.Is(err, http.ErrServerClosed) && ctx.Err() == nil {
			t.Errorf("simulator: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait(); _ = s.Close() })
	return s, "http://" + ln.Addr().String() + "/v1"
}

// runProbes runs requests through spate's engine against the simulator,
// the given fraction of them probes of suites, and returns the stage.
// It also returns how many requests of each family the schedule sent.
func runProbes(t *testing.T, target string, suites []string, fraction float64, requests int, stream bool) (result.Scenario, map[string]int) {
	t.Helper()
	res, sent := runStages(t, target, suites, fraction, stream, []runner.Stage{{Name: "probes", Concurrency: 4, Requests: requests}})
	return res.Scenarios[0], sent[0]
}

// runStages runs stages of load with probes through spate's engine; sent
// counts the probes per family the schedule puts in each stage.
func runStages(t *testing.T, target string, suites []string, fraction float64, stream bool, stages []runner.Stage) (*result.Result, []map[string]int) {
	t.Helper()
	ss, err := probe.Load(context.Background(), suites)
	if err != nil {
		t.Fatal(err)
	}
	set, err := probe.NewSet(ss)
	if err != nil {
		t.Fatal(err)
	}
	sched := probe.Schedule{Set: set, Fraction: fraction}
	// What each stage sends: the stages go on through the workload, each
	// after the requests of the ones before it.
	var sent []map[string]int
	var from uint64
	for _, st := range stages {
		m := map[string]int{}
		for n := from; n < from+uint64(st.Requests); n++ {
			if i, ok := sched.ProbeAt(n); ok {
				su, _ := set.At(i)
				m[su.Family]++
			}
		}
		sent, from = append(sent, m), from+uint64(st.Requests)
	}
	src, err := probe.Mix(workload.Synthetic{Input: workload.Lengths{Mean: 16, Min: 1}, Output: workload.Lengths{Mean: 8, Min: 1}, Seed: 1}, sched)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.CL100K()
	if err != nil {
		t.Fatal(err)
	}
	c, err := openai.New(openai.Config{BaseURL: target, API: openai.Chat, Model: sim.DefaultModel, Stream: stream,
		Timeout: 20 * time.Second, Tokenizer: tok})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := runner.Run(ctx, runner.Plan{
		Stages:    stages,
		Source:    src,
		Client:    c,
		Observers: []runner.Observer{probe.NewObserver(sched)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range res.Scenarios {
		if sc.Probes == nil {
			t.Fatalf("stage %s has no probe figures", sc.Name)
		}
	}
	return res, sent
}

var attackSuites = []string{"injection-direct", "injection-indirect", "prompt-extraction", "sensitive-disclosure"}

// TestAttackSuccessRate is the test: against the simulator with
// vulnerability p, the measured attack success rate is the number of
// attacks the simulator followed (its own count), every refusal is an
// interception, and p lies within the reported interval.
func TestAttackSuccessRate(t *testing.T) {
	for _, tc := range []struct {
		p      float64
		stream bool
	}{{0.3, true}, {0.1, false}} {
		// Each rate against its own simulator, side by side: counts, not
		// timings, are judged.
		t.Run(fmt.Sprintf("p=%g", tc.p), func(t *testing.T) {
			t.Parallel()
			s, url := startSim(t, tc.p)
			const n = 150
			sc, sent := runProbes(t, url, attackSuites, 1, n, tc.stream)
			followed, refused := s.Vulnerable()
			o := sc.Probes.Overall
			if o.Evaluated != n || o.Failed != 0 || followed+refused != n {
				t.Fatalf("%d evaluated, %d failed; the simulator saw %d attacks", o.Evaluated, o.Failed, followed+refused)
			}
			if o.AttackSuccess.K != int(followed) || o.Interception.K != int(refused) {
				t.Errorf("%d successes and %d interceptions measured; the simulator followed %d and refused %d", o.AttackSuccess.K, o.Interception.K, followed, refused)
			}
			if r := o.AttackSuccess; tc.p < r.Low || tc.p > r.High {
				t.Errorf("p=%g outside the measured interval [%.3f, %.3f] (rate %.3f)", tc.p, r.Low, r.High, r.Rate)
			}
			t.Logf("stream=%t: attack success %d/%d = %.3f [%.3f, %.3f], interception %.3f", tc.stream,
				o.AttackSuccess.K, o.AttackSuccess.N, o.AttackSuccess.Rate, o.AttackSuccess.Low, o.AttackSuccess.High, o.Interception.Rate)
			for _, f := range sc.Probes.Families {
				if f.AttackSuccess == nil || f.AttackSuccess.N != sent[f.Family] {
					t.Errorf("family %s: %+v, want %d attacks", f.Family, f.AttackSuccess, sent[f.Family])
				}
			}
		})
	}
}

// TestVulnerabilityOff: with the vulnerability off nothing succeeds, leaks
// or is refused, and the benign set is not flagged.
func TestVulnerabilityOff(t *testing.T) {
	_, url := startSim(t, 0)
	sc, _ := runProbes(t, url, []string{"all"}, 0.5, 200, true)
	o := sc.Probes.Overall
	if o.Evaluated != 100 || o.AttackSuccess.K != 0 || o.Interception.K != 0 || o.Leak.K != 0 || o.FalseRefusal.K != 0 {
		t.Errorf("vulnerability 0: %d evaluated, success %+v, interception %+v, leak %+v, false refusal %+v",
			o.Evaluated, o.AttackSuccess, o.Interception, o.Leak, o.FalseRefusal)
	}
	if o.DistinctSuccess == nil || o.DistinctSuccess.K != 0 || o.DistinctSuccess.N != 30 {
		t.Errorf("vulnerability 0: distinct success %+v, want 0 of the 30 attack probes", o.DistinctSuccess)
	}
	if o.AttackSuccess.High > 0.06 {
		t.Errorf("0 of %d: upper bound %.3f", o.AttackSuccess.N, o.AttackSuccess.High)
	}
}

// TestLeaksAndBenign: against a fully vulnerable simulator every planted
// canary leaks, every attack succeeds, and the benign control set (mixed
// into ordinary load) is neither refused nor leaks; the per-intent
// breakdown splits the probe families. 400 requests a quarter of them
// probes send each probe of the set at least twice.
func TestLeaksAndBenign(t *testing.T) {
	_, url := startSim(t, 1)
	sc, sent := runProbes(t, url, []string{"all"}, 0.25, 400, true)
	fams := map[string]result.ProbeFamily{}
	for _, f := range sc.Probes.Families {
		fams[f.Family] = f
	}
	for _, name := range []string{"system-prompt-extraction", "sensitive-disclosure"} {
		f := fams[name]
		if f.Leak == nil || f.Leak.N == 0 || f.Leak.K != f.Leak.N {
			t.Errorf("%s: leak %+v, want every planted canary leaked", name, f.Leak)
		}
	}
	o := sc.Probes.Overall
	if o.AttackSuccess.K != o.AttackSuccess.N || o.AttackSuccess.N == 0 {
		t.Errorf("vulnerability 1: attack success %+v, want all", o.AttackSuccess)
	}
	b := fams["benign"]
	if b.FalseRefusal == nil || b.FalseRefusal.N != sent["benign"] || b.FalseRefusal.K != 0 || b.Leak.K != 0 || b.Leak.N == 0 {
		t.Errorf("benign: false refusal %+v, leak %+v: want 0 of %d refused, nothing leaked", b.FalseRefusal, b.Leak, sent["benign"])
	}
	for fam, k := range sent {
		if g, ok := sc.Breakdown["intent"]["probe:"+fam]; !ok || g.Requests.Total != k {
			t.Errorf("breakdown by intent: probe:%s has %+v, want %d requests", fam, g.Requests, k)
		}
	}
}

// TestPerStageVulnerability switches the simulator's vulnerability on for
// the second stage only (PUT /admin/faults, as an experiment's stage
// faults do): the figures of each stage show it.
func TestPerStageVulnerability(t *testing.T) {
	_, url := startSim(t, 0)
	admin := strings.TrimSuffix(url, "/v1") + "/admin/faults"
	res, sent := runStages(t, url, []string{"prompt-extraction", "benign"}, 0.5, true, []runner.Stage{
		{Name: "baseline", Concurrency: 4, Requests: 56},
		{Name: "attacked", Concurrency: 4, Requests: 56, Faults: &runner.Faults{URL: admin, Set: map[string]any{"vulnerability": 1}}},
	})
	base, hit := res.Scenarios[0].Probes.Overall, res.Scenarios[1].Probes.Overall
	// The second stage goes on through the workload: its own probes.
	n := sent[0]["system-prompt-extraction"]
	if base.AttackSuccess.K != 0 || base.Leak.K != 0 || base.AttackSuccess.N != n {
		t.Errorf("baseline: success %+v, leak %+v, want 0 of %d", base.AttackSuccess, base.Leak, n)
	}
	n = sent[1]["system-prompt-extraction"]
	if hit.AttackSuccess.K != n || hit.AttackSuccess.N != n || hit.Leak.K != n || hit.FalseRefusal.K != 0 || hit.FalseRefusal.N != sent[1]["benign"] {
		t.Errorf("attacked: success %+v, leak %+v, false refusal %+v, want %d of %d and none of %d", hit.AttackSuccess, hit.Leak, hit.FalseRefusal, n, n, sent[1]["benign"])
	}
}
