package spate_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate"
	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/longtest"
	"github.com/spate-dev/spate/sim"
)

// setFaults PUTs a fault set to the simulator's /admin/faults (body "" is
// DELETE: no faults).
func setFaults(t *testing.T, base, body string) {
	t.Helper()
	method := http.MethodPut
	if body == "" {
		method = http.MethodDelete
	}
	req, _ := http.NewRequest(method, strings.TrimSuffix(base, "/v1")+"/admin/faults", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Errorf("%s /admin/faults: HTTP %d", method, resp.StatusCode)
	}
}

// TestTriggerFiresOnceOnFaults runs the seed's AIOps trigger at a
// compressed time scale against the simulator: 2 s of calm make the
// baseline, then the fault API adds a 300 ms spike to every request and
// fails 20 % of them for 4 s, then clears. The trigger (E2E p95 up by more
// than 150 ms and errors at 5 % or more, held for 1 s, over 1 s windows)
// fires exactly once, while the faults are on, and the run fails.
//
// It needs 9 s of real time, so it runs with -tags integration; the
// default suite replays the same records on a clock of its own through the
// stage's trigger watcher (internal/runner TestTriggerWatchFiresOnceOnFaults)
// and runs a trigger end to end in TestTriggerAbortsAgainstPreviousStage.
func TestTriggerFiresOnceOnFaults(t *testing.T) {
	longtest.Skip(t)
	s, err := sim.Start(sim.Deterministic(20*time.Millisecond, 2*time.Millisecond, 8), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const trig = "delta(p95(e2e), first 2s) > 150ms for 1s and error_rate >= 5%"
	exp := &experiment.Experiment{
		Target:     experiment.Target{URL: s.URL, Model: sim.DefaultModel},
		Workload:   experiment.Workload{InputTokens: "32", OutputTokens: "8"},
		Stages:     []experiment.Stage{{Name: "main", Rate: 80, Arrival: "constant", Duration: 9 * time.Second}},
		Thresholds: []experiment.ThresholdSpec{{Expr: trig, Window: time.Second}, {Expr: "error_rate < 50%"}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	faults := make(chan struct{})
	t0 := time.Now() // the stage starts a few ms later
	go func() {
		defer close(faults)
		for _, step := range []struct {
			at   time.Duration
			body string
		}{{3 * time.Second, `{"spike_rate": 1, "spike_delay": "300ms", "error_rate": 0.2}`}, {7 * time.Second, ""}} {
			select {
			case <-time.After(step.at - time.Since(t0)):
			case <-ctx.Done():
				return
			}
			setFaults(t, s.URL, step.body)
		}
	}()
	res, err := spate.Run(ctx, exp)
	<-faults
	if !errors.Is(err, spate.ErrThresholdsFailed) {
		t.Fatalf("run: %v, want the trigger to fail it", err)
	}
	th := res.Scenarios[0].Thresholds
	if len(th) != 2 || th[0].Expr != "error_rate < 50%" || !th[0].Pass {
		t.Fatalf("thresholds %+v", th)
	}
	o := th[1]
	if !o.Trigger || o.Pass || o.Expr != trig || o.Err != "" {
		t.Fatalf("trigger outcome %+v", o)
	}
	// The faults were on from 3 s to 7 s: with 1 s windows the conditions
	// hold from the evaluation at 4 s and the trigger fires at 5 s (later
	// on a busy machine, but before the faults' last window ends at 8 s);
	// they still hold at 6 and 7 s, the same hold: no second firing.
	if o.Fired != 1 || o.FiredAtS == nil || *o.FiredAtS < 4 || *o.FiredAtS > 8.5 {
		t.Fatalf("fired %d times, first at %v s; want once, between 4 and 8.5 s", o.Fired, deref(o.FiredAtS))
	}
	if o.Value < 150 || o.Value > 450 {
		t.Errorf("delta of p95(e2e) at firing %.1f ms, want about 300", o.Value)
	}
	t.Logf("fired %d time(s) at %.0f s, delta p95(e2e) %.1f ms", o.Fired, *o.FiredAtS, o.Value)
	if res.Aborted != "" {
		t.Errorf("the run was aborted (%s) without abortOnFail", res.Aborted)
	}
}

// TestTriggerAbortsAgainstPreviousStage compares a faulty stage with the
// calm stage before it (the default baseline of a stage that has one) and
// stops the run when the trigger fires, long before the stage's end. The
// calm stage's one second (50 requests) is its baseline; the trigger is
// evaluated once a second and has no hold (holds are proved on a clock of
// its own in internal/runner and internal/verdict/threshold), so it fires
// at the first evaluation in the faults, 1 s in.
func TestTriggerAbortsAgainstPreviousStage(t *testing.T) {
	s, err := sim.Start(sim.Deterministic(20*time.Millisecond, 2*time.Millisecond, 8), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const trig = "delta(p95(e2e)) > 150ms"
	exp := &experiment.Experiment{
		Target:   experiment.Target{URL: s.URL, Model: sim.DefaultModel},
		Workload: experiment.Workload{InputTokens: "32", OutputTokens: "8"},
		Stages: []experiment.Stage{
			{Name: "calm", Rate: 50, Arrival: "constant", Duration: time.Second},
			{Name: "chaos", Rate: 50, Arrival: "constant", Duration: 30 * time.Second,
				Faults: &experiment.StageFaults{URL: "/admin/faults", Set: map[string]any{"spike_rate": 1, "spike_delay": "300ms"}}},
		},
		Thresholds: []experiment.ThresholdSpec{{Expr: trig, AbortOnFail: true, Window: time.Second}},
	}
	// The gate's fail action: a webhook that receives the failed trigger.
	hooked := make(chan gatePayload, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p gatePayload
		_ = json.NewDecoder(r.Body).Decode(&p)
		select {
		case hooked <- p:
		default:
		}
	}))
	defer hook.Close()
	exp.Actions = map[string][]experiment.Action{"fail": {{Webhook: hook.URL}}, "pass": {{Webhook: hook.URL}}}
	t0 := time.Now()
	res, err := spate.Run(context.Background(), exp)
	if !errors.Is(err, spate.ErrThresholdsFailed) {
		t.Fatalf("run: %v", err)
	}
	if el := time.Since(t0); el > 20*time.Second {
		t.Fatalf("the run went on for %v after the trigger fired", el)
	}
	if len(res.Scenarios) != 2 || !strings.Contains(res.Aborted, "stage chaos: trigger "+trig+" fired") {
		t.Fatalf("aborted %q, %d scenarios", res.Aborted, len(res.Scenarios))
	}
	calm, chaos := res.Scenarios[0].Thresholds[0], res.Scenarios[1].Thresholds[0]
	// The calm stage has no previous stage: its baseline is its own first
	// 30 s, longer than the stage, so it cannot judge and says so.
	if calm.Pass || calm.Fired != 0 || !strings.Contains(calm.Err, "never evaluated") {
		t.Errorf("calm %+v", calm)
	}
	if chaos.Pass || chaos.Fired != 1 || chaos.Value < 150 {
		t.Errorf("chaos %+v", chaos)
	}
	select {
	case p := <-hooked:
		if p.Verdict != "fail" || !slices.Contains(p.Failed, "chaos: "+trig) || res.Gate == nil || res.Gate.Verdict != "fail" {
			t.Errorf("gate payload %+v, result gate %+v; want the fail verdict naming the trigger", p, res.Gate)
		}
	default:
		t.Error("the gate's fail action did not run")
	}
}

// gatePayload is what a gate webhook receives.
type gatePayload struct {
	Verdict string   `json:"verdict"`
	Failed  []string `json:"failed_thresholds"`
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
