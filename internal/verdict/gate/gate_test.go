package gate

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/verdict/threshold"
	"github.com/spate-dev/spate/result"
)

func unjudged(sc result.Scenario) result.Scenario {
	sc.Thresholds = []result.ThresholdOutcome{{Expr: "msr >= 0.9", Err: "msr was not measured in this run", Unjudged: true}}
	return sc
}

func failed(sc result.Scenario) result.Scenario {
	sc.Thresholds = []result.ThresholdOutcome{{Expr: "p99(ttft) < 1s", Value: 1200}}
	return sc
}

func TestVerdict(t *testing.T) {
	valid := result.Scenario{Name: "a", Load: result.Load{Valid: true}}
	invalid := result.Scenario{Name: "b"}
	tests := []struct {
		r    *result.Result
		err  error
		want string
	}{
		{&result.Result{ThresholdsPassed: true, Scenarios: []result.Scenario{valid}}, nil, Pass},
		{&result.Result{ThresholdsPassed: false, Scenarios: []result.Scenario{valid}}, nil, Fail},
		{&result.Result{ThresholdsPassed: true, Scenarios: []result.Scenario{valid, invalid}}, nil, Invalid},
		{&result.Result{ThresholdsPassed: false, Scenarios: []result.Scenario{invalid}}, nil, Fail},
		// A threshold that could not be judged, none failed: no verdict.
		{&result.Result{ThresholdsPassed: false, Scenarios: []result.Scenario{unjudged(valid)}}, nil, Invalid},
		// A failed one wins over it.
		{&result.Result{ThresholdsPassed: false, Scenarios: []result.Scenario{unjudged(valid), failed(valid)}}, nil, Fail},
		{&result.Result{ThresholdsPassed: false, Aborted: "stage a: stopped", Scenarios: []result.Scenario{unjudged(valid)}}, nil, Fail},
		{&result.Result{ThresholdsPassed: true, Interrupted: true}, nil, Error},
		{&result.Result{ThresholdsPassed: true}, errors.New("no request succeeded"), Error},
		{nil, nil, Error},
	}
	for i, tc := range tests {
		if got := Verdict(tc.r, tc.err); got != tc.want {
			t.Errorf("case %d: %s, want %s", i, got, tc.want)
		}
	}
}

func TestCommandAndWebhook(t *testing.T) {
	var got Payload
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken" {
			w.WriteHeader(500)
			return
		}
		json.NewDecoder(r.Body).Decode(&got)
	}))
	defer hook.Close()
	out := filepath.Join(t.TempDir(), "verdict.txt")
	p := Payload{Verdict: Fail, Result: "r.json", Fingerprint: "abc", Failed: []string{"main: p99(ttft) < 1ms"}}
	outs := Run(context.Background(), []experiment.Action{
		{Command: []string{"sh", "-c", `echo "$SPATE_VERDICT $SPATE_RESULT $SPATE_FINGERPRINT" > ` + out}},
		{Webhook: hook.URL + "/verdict"},
		{Command: []string{"sh", "-c", "echo boom >&2; exit 3"}},
		{Command: []string{"sleep", "5"}, Timeout: 100 * time.Millisecond},
		{Webhook: hook.URL + "/broken"},
		{Command: []string{"/nonexistent/promote"}},
	}, p)
	want := []bool{true, true, false, false, false, false}
	for i, o := range outs {
		if o.OK != want[i] {
			t.Errorf("action %d (%s): ok %v, want %v (%s)", i, o.Action, o.OK, want[i], o.Error)
		}
	}
	if b, _ := os.ReadFile(out); strings.TrimSpace(string(b)) != "fail r.json abc" {
		t.Errorf("command saw %q", b)
	}
	if got.Verdict != Fail || len(got.Failed) != 1 {
		t.Errorf("webhook got %+v", got)
	}
	if !strings.Contains(outs[2].Error, "boom") || !strings.Contains(outs[3].Error, "timed out") || outs[3].Seconds > 3 {
		t.Errorf("errors: %q / %q after %.1fs", outs[2].Error, outs[3].Error, outs[3].Seconds)
	}
}

func TestCheckAndFailed(t *testing.T) {
	if (experiment.Action{}).Check() == nil || (experiment.Action{Command: []string{"x"}, Webhook: "http://x"}).Check() == nil || (experiment.Action{Webhook: "http://x"}).Check() != nil {
		t.Error("Check")
	}
	r := &result.Result{Scenarios: []result.Scenario{{Name: "s", Thresholds: []threshold.Outcome{{Expr: "a", Pass: true}, {Expr: "b"}}}}}
	if f := FailedThresholds(r); len(f) != 1 || f[0] != "s: b" {
		t.Errorf("%v", f)
	}
}

// TestFailedThresholdsLeaveOutUnjudged: a webhook's failed_thresholds name
// the thresholds that failed, not those that could not be judged
// (verdict.Unjudged, unjudged_thresholds).
func TestFailedThresholdsLeaveOutUnjudged(t *testing.T) {
	valid := result.Scenario{Name: "a", Load: result.Load{Valid: true}}
	sc := unjudged(valid)
	sc.Thresholds = append(sc.Thresholds, failed(valid).Thresholds...)
	if got := FailedThresholds(&result.Result{Scenarios: []result.Scenario{sc}}); len(got) != 1 || got[0] != "a: p99(ttft) < 1s" {
		t.Errorf("failed thresholds %q, want only a: p99(ttft) < 1s", got)
	}
}
