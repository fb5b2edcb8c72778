package chaos

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/failover"
	"github.com/spate-dev/spate/internal/jitter"
	"github.com/spate-dev/spate/internal/longtest"
	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/workload"
)

// TestBlackholeFailover runs 40 req/s for 2.25 s against two simulators,
// the first behind the proxy, which black-holes it three times for a
// quarter of a second (from 0.5, 1 and 1.5 s into the stage, set through
// the stage's faults over the admin API): 10 sends in each window. The
// client fails over after a 300 ms attempt timeout, so each window's
// failover time is the wait for the next send after onset (< 25 ms) +
// 300 ms + the second simulator's 20 ms to its first token;
// every retried request converges, so MSR = 1 − T_failover / 800 ms. The
// median of the three windows is held to the planted timings (a loaded
// machine may stall any one request). The stage's E2E SLO (200 ms) is the
// recovery's bound: a bin after a window is bad when a request in it waited
// out an attempt, not when a loaded machine slowed one past 1.5 × the
// baseline's p99 (the bound without an SLO: about 55 ms here, which one
// request slowed by 20 ms under a whole CI run passed, leaving window 0
// "not recovered").
//
// Under load (three suites at once on two cores, load about 10) the
// client's stalls break what the machine must keep pace for, and only
// those checks are judged on the best of up to five fresh tries (jitter.BestOf; fresh
// simulators, proxy and client), each try's problems logged: a window
// whose sends the client bunched after a stall (6 of its 10 requests sent
// in it, all of them reaching the proxy after it ended; or none at all, 90
// outside), a window whose requests reached the proxy late enough to
// escape the fault (inside p50 183.5 ms, under the 335 ms attempt), a
// stall of the whole run (outside p50 515 ms; window 1 failing over in
// 1583 ms, 11 of its 12 requests failing at b too, which waited out the
// attempt as well). A client that ignored the attempt timeout, a proxy
// that placed its windows wrongly or black-holed no one, or figures that
// counted wrongly, fail every try. What no stall can break stays hard in
// every try: no failover is faster than the attempt timeout, a window
// without a failover carries the warning saying why, the windows' times
// are the schedule's, and the figures agree with one another.
func TestBlackholeFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	jitter.BestOf(t, func() []string { return blackholeFailoverTry(t) })
}

// blackholeFailoverTry runs TestBlackholeFailover's stage once, from
// scratch, reports what no stall excuses with t.Errorf and returns the
// problems a stalled machine can cause.
func blackholeFailoverTry(t *testing.T) (problems []string) {
	problem := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	const (
		attempt = 300 * time.Millisecond
		e2eB    = 35 * time.Millisecond // 20 ms TTFT + 3 × 5 ms ITL
		ttftB   = 20 * time.Millisecond
		gap     = 25 * time.Millisecond
	)
	simA, simB := startSim(t, 20*time.Millisecond, 5*time.Millisecond, 4), startSim(t, 20*time.Millisecond, 5*time.Millisecond, 4)
	p, proxyURL := startProxy(t, simA, nil)
	fc, err := failover.New(failover.Config{
		Upstreams: []failover.Upstream{{Name: "a", Client: newClient(t, proxyURL, 10*time.Second)}, {Name: "b", Client: newClient(t, simB, 10*time.Second)}},
		Policy:    failover.Failover, Budget: 1, AttemptTimeout: attempt,
	})
	if err != nil {
		t.Fatal(err)
	}
	var sched []any
	for _, from := range []string{"0.5s", "1s", "1.5s"} {
		until := map[string]string{"0.5s": "0.75s", "1s": "1.25s", "1.5s": "1.75s"}[from]
		sched = append(sched, map[string]any{"from": from, "until": until, "blackhole_rate": 1})
	}
	obs := &Observer{Stats: LocalStats(p), RecoveryBin: 250 * time.Millisecond}
	res, err := runner.Run(context.Background(), runner.Plan{
		Stages: []runner.Stage{{Name: "chaos", Arrival: "constant", Rate: 40, Duration: 2250 * time.Millisecond, SLO: metrics.SLO{E2E: 200 * time.Millisecond},
			Faults: &runner.Faults{URL: proxyURL + "/admin/faults", Set: map[string]any{"schedule": sched}}}},
		Source:    workload.Synthetic{Input: workload.Lengths{Mean: 8}, Output: workload.Lengths{Mean: 4}, Seed: 1},
		Client:    fc,
		Observers: []runner.Observer{obs},
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	c := res.Scenarios[0].Chaos
	if c == nil || len(c.Windows) != 3 {
		t.Fatalf("chaos section %+v", c)
	}
	warned := func(prefix string) bool {
		return slices.ContainsFunc(c.Warnings, func(s string) bool { return strings.HasPrefix(s, prefix) })
	}
	var failovers, recoveries []float64
	for i, w := range c.Windows {
		// The schedule starts when the proxy takes it, after the stage's
		// start by the time that takes (0.1 s seen under three suites):
		// the first window at 0.5 s or a little later, each 0.25 s long
		// and 0.5 s after the one before.
		// How long the proxy takes to take it is the machine's (0.36 s
		// seen, three suites at once): a late first window is judged
		// again, a window of the wrong length or spacing never.
		at := c.Windows[0].StartS + 0.5*float64(i)
		if math.Abs(w.EndS-w.StartS-0.25) > 0.001 || math.Abs(w.StartS-at) > 0.05 || c.Windows[0].StartS < 0.5 {
			t.Errorf("window %d: %.3f–%.3f s, want %.2f–%.2f s (the first from 0.5 s)", i, w.StartS, w.EndS, at, at+0.25)
		}
		if i == 0 && w.StartS > 0.8 {
			problem("window 0 from %.3f s, want 0.5 s to 0.8 s: the proxy took the schedule late", w.StartS)
		}
		if w.FailoverMS == nil {
			// The figures take a window's requests by when the client
			// sent them, the proxy black-holes by when they reach it: a
			// client stalled through the window, or sending its requests
			// in a burst at its end, leaves none the fault reached. The
			// result must say so; the try is then not judged.
			if !warned(fmt.Sprintf("window %d: no request", i)) {
				t.Errorf("window %d: no failover and no warning saying why: %+v; warnings %q", i, w, c.Warnings)
			}
			problem("window %d %.3f–%.3f s: no failover measured, %d requests sent in it (10 planned): %+v; warnings %q", i, w.StartS, w.EndS, w.Inside.Requests, w, c.Warnings)
			continue
		}
		failovers = append(failovers, *w.FailoverMS)
		if w.RecoveryMS == nil {
			// A stalled machine can push a window's last bad bin so late
			// that no whole bin follows it before the next fault: the
			// recovery cannot be told, and the result must say so.
			if !warned(fmt.Sprintf("window %d: recovery not measured", i)) {
				t.Errorf("window %d: no recovery and no warning saying why: %+v; warnings %q", i, w, c.Warnings)
			}
			t.Logf("window %d %.3f–%.3f s: failover %.1f ms, recovery not measured; inside %+v", i, w.StartS, w.EndS, *w.FailoverMS, w.Inside)
		} else {
			t.Logf("window %d %.3f–%.3f s: failover %.1f ms, recovery %.0f ms; inside %+v", i, w.StartS, w.EndS, *w.FailoverMS, *w.RecoveryMS, w.Inside)
			recoveries = append(recoveries, *w.RecoveryMS)
		}
		// Every request inside waited out the attempt timeout, when each
		// reached the proxy before the window ended.
		if w.Inside.E2EP50MS < ms(attempt+e2eB)-5 || w.Outside.E2EP50MS >= w.Inside.E2EP50MS {
			problem("window %d: E2E p50 inside %.1f ms (want ≥ %v), outside %.1f ms", i, w.Inside.E2EP50MS, attempt+e2eB, w.Outside.E2EP50MS)
		}
	}
	t.Logf("r_retry %v, msr %v (%s), injected %v, errors seen %d, retried %d, upstreams %v", deref(c.RRetry), deref(c.MSR), c.MSRGrade, c.Injected, c.ErrorsSeen, c.Retried, c.Upstreams)
	slices.Sort(failovers)
	slices.Sort(recoveries)
	lo, hi := ms(attempt+ttftB)-5, ms(attempt+ttftB+gap)+60
	// No failover is faster than the attempt timeout, however loaded.
	if len(failovers) > 0 && failovers[0] < lo {
		t.Errorf("failover %.1f ms is shorter than the attempt timeout allows", failovers[0])
	}
	if len(failovers) == 3 {
		if m := failovers[1]; m > hi {
			problem("median failover %.1f ms, want %.0f..%.0f", m, lo, hi)
		}
	}
	// Most windows' recovery is 0 (A answers again at once); one that a
	// stall left unmeasured is not counted.
	if len(recoveries) < 2 || recoveries[(len(recoveries)-1)/2] != 0 {
		problem("recoveries %v ms of %d windows, want two or more measured, most of them 0: A answers again at once", recoveries, len(c.Windows))
	}
	// 10 sends in each quarter-second window (±1 at its edges); a stalled
	// machine may fail over a few more requests outside them.
	bh := c.Injected["blackhole"]
	if c.RRetry == nil || *c.RRetry != 1 || bh < 27 || bh > 33 || int64(c.Retried) < bh || c.ErrorsSeen != 0 {
		problem("black-holes %d (want 30), retried %d (want ≥ them), r_retry %v (want 1), errors %d", bh, c.Retried, deref(c.RRetry), c.ErrorsSeen)
	}
	// The figures agree with one another, whatever the machine did.
	if len(failovers) > 0 && (c.FailoverMS == nil || *c.FailoverMS != failovers[len(failovers)-1]) {
		t.Errorf("failover_ms %v is not the slowest window's %v", deref(c.FailoverMS), failovers[len(failovers)-1])
	}
	if len(failovers) == 3 && c.RRetry != nil {
		// MSR = (1 − T_failover / 800 ms) × R_retry.
		if want := (1 - min(*c.FailoverMS/800, 1)) * *c.RRetry; c.MSR == nil || math.Abs(*c.MSR-want) > 1e-12 || c.MSRGrade != Grade(want) {
			t.Errorf("msr %v %s, want %v", deref(c.MSR), c.MSRGrade, want)
		}
	}
	if c.FaultsInjected != bh || bh == 0 || c.ErrorAmplification == nil || *c.ErrorAmplification != float64(c.ErrorsSeen)/float64(bh) {
		t.Errorf("failing faults %d, black-holes %d, amplification %v with %d errors", c.FaultsInjected, bh, deref(c.ErrorAmplification), c.ErrorsSeen)
	}
	// Under the failover policy a request's second attempt is b's.
	if c.Upstreams["b"] != c.Retried {
		t.Errorf("upstreams %v, retried %d", c.Upstreams, c.Retried)
	}
	if c.Upstreams["a"]+c.Upstreams["b"] != 90 {
		problem("upstreams %v: %d requests, want the 90 planned", c.Upstreams, c.Upstreams["a"]+c.Upstreams["b"])
	}
	return problems
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestBlackholeLongStreams: answers stream for 2 s (50 ms to the first
// token, then 20 tokens 100 ms apart) from two simulators, the first
// behind the proxy, black-holed from 1 s to 2.5 s; the client fails over
// after a 300 ms attempt timeout. T_failover runs to the first token of
// the first request the fault reached that succeeded, so it is about
// 300 + 50 ms (plus the wait for the next send), not the 2 s to the end of
// that answer, and MSR is well above 0 with no error. It sends 2 s streams
// for 4 s, so it runs with -tags integration; TestFigures checks the same
// rule (failover to the first token, not the end) on planted samples.
func TestBlackholeLongStreams(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() {
		t.Skip("sends 2 s streams for 4 s")
	}
	const attempt = 300 * time.Millisecond
	simA, simB := startSim(t, 50*time.Millisecond, 100*time.Millisecond, 21), startSim(t, 50*time.Millisecond, 100*time.Millisecond, 21)
	p, proxyURL := startProxy(t, simA, nil)
	fc, err := failover.New(failover.Config{
		Upstreams: []failover.Upstream{{Name: "a", Client: newClient(t, proxyURL, 10*time.Second)}, {Name: "b", Client: newClient(t, simB, 10*time.Second)}},
		Policy:    failover.Failover, Budget: 1, AttemptTimeout: attempt,
	})
	if err != nil {
		t.Fatal(err)
	}
	sched := []any{map[string]any{"from": "1s", "until": "2.5s", "blackhole_rate": 1}}
	obs := &Observer{Stats: LocalStats(p)}
	res, err := runner.Run(context.Background(), runner.Plan{
		Stages: []runner.Stage{{Name: "chaos", Arrival: "constant", Rate: 5, Duration: 4 * time.Second,
			Faults: &runner.Faults{URL: proxyURL + "/admin/faults", Set: map[string]any{"schedule": sched}}}},
		Source:    workload.Synthetic{Input: workload.Lengths{Mean: 8}, Output: workload.Lengths{Mean: 21}, Seed: 1},
		Client:    fc,
		Observers: []runner.Observer{obs},
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	sc := res.Scenarios[0]
	c := sc.Chaos
	if c == nil || c.FailoverMS == nil || c.MSR == nil || c.RRetry == nil {
		t.Fatalf("chaos section %+v", c)
	}
	t.Logf("e2e p50 %.0f ms; failover %.1f ms, r_retry %.3f (%d/%d), msr %.3f (%s), errors %d",
		sc.Metrics["e2e_ms"].P50, *c.FailoverMS, *c.RRetry, c.RetriedOK, c.RetryAttempts, *c.MSR, c.MSRGrade, c.ErrorsSeen)
	if sc.Metrics["e2e_ms"].P50 < 2000 {
		t.Errorf("e2e p50 %.0f ms: the answers were meant to stream for 2 s", sc.Metrics["e2e_ms"].P50)
	}
	if *c.FailoverMS < ms(attempt) || *c.FailoverMS > 700 || *c.MSR <= 0 || c.ErrorsSeen != 0 || *c.RRetry != 1 {
		t.Errorf("failover %.1f ms (want 300–700: onset to a first token), msr %v (want > 0), errors %d, r_retry %v", *c.FailoverMS, *c.MSR, c.ErrorsSeen, *c.RRetry)
	}
}
