package spate_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate"
	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/longtest"
	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/metrics/observe"
	"github.com/spate-dev/spate/llmtest"
	"github.com/spate-dev/spate/result"
	"github.com/spate-dev/spate/sim"
)

// burnEnv makes the test binary a CPU burner (TestBurnHelper) for the
// number of seconds it holds.
const burnEnv = "SPATE_TEST_BURN_SECONDS"

// TestBurnHelper is not a test: run by burners with burnEnv set, it keeps
// one CPU busy until its time is up or its parent closes its stdin.
func TestBurnHelper(t *testing.T) {
	secs, err := strconv.ParseFloat(os.Getenv(burnEnv), 64)
	if err != nil {
		t.Skip("a CPU burner for other tests")
	}
	stop := make(chan struct{})
	go func() { _, _ = os.Stdin.Read(make([]byte, 1)); close(stop) }()
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	x := 1
	for time.Now().Before(end) {
		select {
		case <-stop:
			return
		default:
		}
		for i := 0; i < 1_000_000; i++ {
			x = x*1103515245 + 12345
		}
	}
	_ = x
}

// burners starts n processes that each keep a CPU busy for at most d, and
// stops them when the test ends.
func burners(t *testing.T, n int, d time.Duration) {
	t.Helper()
	for range n {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBurnHelper$")
		cmd.Env = append(os.Environ(), burnEnv+"="+strconv.FormatFloat(d.Seconds(), 'f', 1, 64))
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			stdin.Close()
			_ = cmd.Wait()
		})
	}
	time.Sleep(200 * time.Millisecond) // let them spin up
}

// TestValidUnderCPUBurners: a 20 req/s run while two processes keep the
// machine's CPUs busy is a valid measurement: its sends keep the scheduled
// rate and its lags stay small against the 50 ms gap and the latencies.
// The figures that show it are logged. It needs seconds of load beside
// the burners, so it runs with -tags integration; the validity rule's
// causes and bounds are tested on records stamped by hand in
// internal/metrics (TestValidityCauses).
func TestValidUnderCPUBurners(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() {
		t.Skip("sends load for 3 s beside two CPU burners")
	}
	srv := llmtest.NewServer(llmtest.Config{TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond, Tokens: 8})
	defer srv.Close()
	burners(t, 2, 10*time.Second)
	res, err := spate.Run(context.Background(), &experiment.Experiment{
		Target: experiment.Target{URL: srv.BaseURL(), Model: "m"},
		Stages: []experiment.Stage{{Name: "main", Rate: 20, Duration: 3 * time.Second}},
	})
	if res == nil {
		t.Fatal(err)
	}
	l := res.Scenarios[0].Load
	v := l.Validity
	t.Logf("sends %d, at %.1f %% of the scheduled rate, %d missed; lag p99 %.1f ms, %d sends over the %.1f ms bound (gap %.1f ms, latency p50 %.1f ms); slope %.2f ms/s (t %.1f)",
		v.Sends, 100*v.RateRatio, l.Missed, v.LagP99MS, v.LateSends, v.BoundMS, v.MedianGapMS, v.LatencyP50MS, v.LagSlopeMSPerS, v.LagSlopeT)
	if err != nil || !l.Valid || res.Verdict != "pass" {
		t.Fatalf("err %v, verdict %q: %s", err, res.Verdict, l.InvalidReason)
	}
}

// TestREADMERunUnderSixteenBurners: the README's first run (20 req/s of
// Poisson arrivals for 10 s against a server at TTFT 80 ms and ITL 12 ms,
// p99(ttft) < 800ms and goodput >= 95%) while sixteen CPU-burning
// processes share the machine, as on a busy CI runner: a late read can
// make a latency look some ms too high, it cannot turn 100 ms into 800 ms,
// so the verdict stands (exit 0) with the measurement error beside it.
// Before, every try exited 4 (reader_lag). What a late read does not
// cause may still, honestly, change a try: the generator could not send
// on schedule (generator_saturated, missed_sends: on a slower machine of
// the same kind, 8–28 of 195 sends over 66 ms late in 4 of 6 tries), the
// server, which shares the starved CPUs, was slow to read its requests
// (server_backpressure) or to answer (a CI run: TTFT p99 in [888, 908] ms
// on a kept schedule), or a threshold's range straddles its limit
// (goodput 0.928 measured, [0.928, 1] with the late reads). So: no stage
// invalid for another cause; a fail only where every failed figure fails
// at both ends of its range and, on a kept schedule, where the simulator's
// own clock shows it late (a first token over 250 ms, three
// times its TTFT); exit 4 only on an invalid stage or an unjudged
// threshold; and of up to five tries, until two pass, at least one passes.
func TestREADMERunUnderSixteenBurners(t *testing.T) {
	longtest.Skip(t)
	if testing.Short() {
		t.Skip("sends up to five runs of 10 s beside sixteen CPU burners")
	}
	s, err := sim.Start(sim.Deterministic(80*time.Millisecond, 12*time.Millisecond, 0), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	burners(t, 16, 150*time.Second)
	slowBefore := simSlowFirstTokens(t, s.URL, 0.25)
	passes := 0
	for try := 1; try <= 5 && passes < 2; try++ {
		res, err := spate.Run(context.Background(), &experiment.Experiment{
			Target:     experiment.Target{URL: s.URL, Model: sim.DefaultModel},
			Workload:   experiment.Workload{InputTokens: "512:64", OutputTokens: "128"},
			SLO:        map[string]time.Duration{"ttft": 500 * time.Millisecond, "tpot": 50 * time.Millisecond},
			Stages:     []experiment.Stage{{Name: "main", Rate: 20, Duration: 10 * time.Second}},
			Thresholds: []experiment.ThresholdSpec{{Expr: "p99(ttft) < 800ms"}, {Expr: "goodput >= 95%"}},
		})
		if res == nil {
			t.Fatal(err)
		}
		sc := res.Scenarios[0]
		slow := simSlowFirstTokens(t, s.URL, 0.25) - slowBefore
		slowBefore += slow
		t.Logf("try %d: exit %d, verdict %s, TTFT p99 %.1f ms, the server's own first tokens over 250 ms %d, valid %v (%s), thresholds %+v, error %+v", try, spate.ExitCode(err), res.Verdict,
			sc.Metrics[metrics.TTFT].P99, slow, sc.Load.Valid, sc.Load.InvalidReason, sc.Thresholds, sc.MeasurementError)
		unjudged := slices.ContainsFunc(sc.Thresholds, func(th result.ThresholdOutcome) bool { return th.Unjudged })
		switch cause := sc.Load.InvalidCause; {
		case !sc.Load.Valid && cause != metrics.CauseGenerator && cause != metrics.CauseMissed && cause != metrics.CauseBackpressure:
			t.Errorf("try %d: invalid for %s (%s): want valid, the generator's own lag or the starved server's", try, cause, sc.Load.InvalidReason)
		case err == nil && res.Verdict == "pass":
			passes++
		case res.Verdict == "fail" && !failsAtBothEnds(sc.Thresholds):
			t.Errorf("try %d: exit %d (%v), verdict fail with thresholds %+v: a fail must be the same at both ends of every failed figure's range", try, spate.ExitCode(err), err, sc.Thresholds)
		case res.Verdict == "fail" && sc.Load.Valid && slow == 0:
			t.Errorf("try %d: verdict fail on a kept schedule, but the server gave no first token over 250 ms by its own clock: a late read must not make a fail", try)
		case res.Verdict == "fail":
			t.Logf("try %d: a fail on a starved machine (valid %v, %s): %d of the server's own first tokens over 250 ms (its TTFT is 80 ms)", try, sc.Load.Valid, sc.Load.InvalidCause, slow)
		case spate.ExitCode(err) != 4:
			t.Errorf("try %d: exit %d (%v), verdict %q: want 0 and pass, 3 and fail, or 4", try, spate.ExitCode(err), err, res.Verdict)
		case sc.Load.Valid && !unjudged:
			t.Errorf("try %d: exit 4 (%v) with a valid stage and every threshold judged", try, err)
		}
	}
	if passes == 0 {
		t.Errorf("no try passed: a late read must not keep a verdict from standing")
	}
}

// failsAtBothEnds reports whether every failed threshold was judged: its
// figure's range (when it has one) fails at both ends, so no late read
// could have made it pass. The README run's thresholds are an upper limit
// on p99(ttft) and a lower limit on goodput.
func failsAtBothEnds(ths []result.ThresholdOutcome) bool {
	for _, th := range ths {
		if th.Pass {
			continue
		}
		if th.Unjudged {
			return false
		}
		switch {
		case th.Expr == "p99(ttft) < 800ms" && th.Low != nil && *th.Low < 800:
			return false
		case th.Expr == "goodput >= 95%" && th.High != nil && *th.High >= 0.95:
			return false
		}
	}
	return true
}

// simSlowFirstTokens is how many first tokens the simulator at url has
// sent, by its own clock (vllm:time_to_first_token_seconds, from the
// request's arrival to its first token), later than over seconds: a
// server starved of CPU shows there, whatever its clients read.
func simSlowFirstTokens(t *testing.T, url string, over float64) uint64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(url, "/v1")+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4") // the classic text ParseText reads
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scraping the simulator's metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping the simulator's metrics: HTTP %s", resp.Status)
	}
	fams, err := observe.ParseText(resp.Body)
	if err != nil {
		t.Fatalf("scraping the simulator's metrics: %v", err)
	}
	mf := fams["vllm:time_to_first_token_seconds"]
	if mf == nil || len(mf.GetMetric()) != 1 {
		t.Fatalf("the simulator's metrics have no one TTFT histogram: %v", mf)
	}
	h := mf.GetMetric()[0].GetHistogram()
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == over {
			return h.GetSampleCount() - b.GetCumulativeCount()
		}
	}
	t.Fatalf("the simulator's TTFT histogram has no bucket at %g s", over)
	return 0
}

// TestSaturatedGeneratorIsInvalid: a streaming run at a rate no machine
// can send is invalid, exits 4 (0 with allowInvalid), counts what it could
// not send as missed and still ends on time. The two runs go side by side,
// each against its own server: each only has to be more than its machine
// can send.
func TestSaturatedGeneratorIsInvalid(t *testing.T) {
	if testing.Short() {
		t.Skip("sends load for a second")
	}
	for _, allow := range []bool{false, true} {
		t.Run(fmt.Sprintf("allowInvalid=%v", allow), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(llmtest.Config{TTFT: time.Millisecond, ITL: time.Millisecond, Tokens: 4})
			defer srv.Close()
			x := &experiment.Experiment{
				Target:      experiment.Target{URL: srv.BaseURL(), Model: "m"},
				Stages:      []experiment.Stage{{Name: "main", Rate: 1e6, Arrival: "constant", Duration: 200 * time.Millisecond}},
				Measurement: experiment.Measurement{AllowInvalid: allow},
			}
			t0 := time.Now()
			res, err := spate.Run(context.Background(), x)
			took := time.Since(t0)
			if res == nil {
				t.Fatal(err)
			}
			l := res.Scenarios[0].Load
			t.Logf("sent %d, missed %d, in %v: %s", res.Scenarios[0].Requests.Total, l.Missed, took, l.InvalidReason)
			want := spate.ExitUntrustworthy
			if allow {
				want = spate.ExitOK
			}
			if l.Valid || l.Missed == 0 || res.Verdict != "invalid" || spate.ExitCode(err) != want {
				t.Fatalf("valid %v, missed %d, verdict %q, exit %d (err %v): want invalid, missed sends, exit %d", l.Valid, l.Missed, res.Verdict, spate.ExitCode(err), err, want)
			}
			if !allow && !errors.Is(err, spate.ErrUntrustworthy) {
				t.Fatalf("err %v, want ErrUntrustworthy", err)
			}
			// 0.2 s of schedule, its 500 ms grace, and the drain of
			// requests that take a few ms: a bound far below the minutes
			// it took to send every scheduled request late.
			if took > 30*time.Second {
				t.Fatalf("took %v", took)
			}
			var _ result.Load = l
		})
	}
}

// TestLateReadsBoundTheVerdict: a run whose reactor reads late keeps a
// valid measurement (the server saw the load it was sent) and judges each
// threshold at both ends of its figure's measurement error, end to end.
// The reactor is made to sleep 8 ms after every wake-up
// (rawhttp.SetWakeStall), against a server that writes a token a
// millisecond: each stream's first token then shares a read with the next
// several, whose kernel receive time is the last one's, so the TTFT spate
// measures is some 8 ms long. The TTFT range must hold the server's 5 ms;
// a limit far above the range passes, one inside it cannot be judged (exit
// 4), one below it fails (exit 3). Not parallel: the stall holds every
// reactor of the test binary; a run whose sends the machine made late, or
// whose server it made slow to read them, goes again (up to three times).
func TestLateReadsBoundTheVerdict(t *testing.T) {
	if !rawhttp.Available() {
		t.Skip("the reactor reads streams only on Linux")
	}
	if testing.Short() {
		t.Skip("sends load for a second")
	}
	const ttft, stall = 5 * time.Millisecond, 8 * time.Millisecond
	srv := llmtest.NewServer(llmtest.Config{TTFT: ttft, ITL: time.Millisecond, Tokens: 16})
	defer srv.Close()
	defer rawhttp.SetWakeStall(stall)()
	run := func(thresholds ...string) (*result.Result, error) {
		x := &experiment.Experiment{
			Target: experiment.Target{URL: srv.BaseURL(), Model: "m"},
			Stages: []experiment.Stage{{Name: "main", Rate: 40, Arrival: "constant", Duration: time.Second}},
		}
		for _, e := range thresholds {
			x.Thresholds = append(x.Thresholds, experiment.ThresholdSpec{Expr: e})
		}
		// With every reactor stalled, a busy machine may also make a run
		// send late (generator_saturated) or its in-process server slow
		// to read requests (server_backpressure), both seen beside three
		// suites, which this test, about reads, is not about. Such a run
		// goes again, up to three times.
		for try := 1; ; try++ {
			res, err := spate.Run(context.Background(), x)
			if res == nil {
				t.Fatal(err)
			}
			l := res.Scenarios[0].Load
			if l.Valid || try == 3 || l.InvalidCause != metrics.CauseGenerator && l.InvalidCause != metrics.CauseMissed && l.InvalidCause != metrics.CauseBackpressure {
				return res, err
			}
			t.Logf("try %d of %v: the generator sent late (%s): again", try, thresholds, l.InvalidReason)
		}
	}
	res, err := run("p50(ttft) < 1s", "p50(ttft) < 10ms")
	sc := res.Scenarios[0]
	l := sc.Load
	ttftP50 := sc.Metrics[metrics.TTFT].P50
	t.Logf("%d requests, TTFT p50 %.2f ms (server %v), valid %v (%s), error %+v, thresholds %+v", sc.Requests.Total, ttftP50, ttft, l.Valid, l.InvalidReason, sc.MeasurementError, sc.Thresholds)
	// The stall did move the stamps: the verdict has something to catch.
	if ttftP50 < 10.5 {
		t.Fatalf("TTFT p50 %.2f ms: the stall of %v did not delay the first tokens' stamps past 10 ms", ttftP50, stall)
	}
	if !l.Valid {
		t.Fatalf("invalid (%s): late reads do not change the load the server saw", l.InvalidReason)
	}
	me := sc.MeasurementError
	if me == nil || me.Figures[metrics.TTFT].Late == 0 {
		t.Fatalf("measurement error %+v: want late first tokens", me)
	}
	// The range holds the truth: the server's 5 ms, a little more for
	// the loopback and the server's own timer.
	if r := me.Figures[metrics.TTFT].P50; r.Low > 5.5 || r.High < ttftP50-0.01 {
		t.Fatalf("TTFT p50 range [%.2f, %.2f] ms: want it to hold the server's 5 ms and the measured %.2f", r.Low, r.High, ttftP50)
	}
	pass, inside := sc.Thresholds[0], sc.Thresholds[1]
	if !pass.Pass || pass.Unjudged || !inside.Unjudged || inside.Pass {
		t.Fatalf("thresholds %+v: want the first passed, the second unjudged", sc.Thresholds)
	}
	if res.Verdict != "invalid" || spate.ExitCode(err) != spate.ExitUntrustworthy {
		t.Fatalf("verdict %q, exit %d (err %v): a limit inside the error's range cannot be judged (exit %d)", res.Verdict, spate.ExitCode(err), err, spate.ExitUntrustworthy)
	}
	// Far from the range both ways: the verdict stands.
	res, err = run("p50(ttft) < 1s")
	if res.Verdict != "pass" || err != nil {
		t.Fatalf("verdict %q (err %v): want pass, whatever the late reads", res.Verdict, err)
	}
	res, err = run("p50(ttft) > 1s")
	if res.Verdict != "fail" || spate.ExitCode(err) != spate.ExitThresholds {
		t.Fatalf("verdict %q, exit %d (err %v): want fail, exit %d", res.Verdict, spate.ExitCode(err), err, spate.ExitThresholds)
	}
}
