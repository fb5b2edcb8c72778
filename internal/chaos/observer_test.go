package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/verdict"
	"github.com/spate-dev/spate/result"
)

// TestObserverProxyNeverSawTheLoad: a stage whose requests the chaos proxy
// (read through --chaos-stats) never saw is invalid, faults_not_applied:
// its load went straight to the service, and the figures are of a service
// without the faults (it passed, exit 0), and no --allow-invalid accepts
// it. A proxy that saw them, or a run with no proxy to see them, leaves the
// stage valid.
func TestObserverProxyNeverSawTheLoad(t *testing.T) {
	for _, tc := range []struct {
		name    string
		proxied bool
		seen    int64
		valid   bool
	}{
		{"not through the proxy", true, 0, false},
		{"through the proxy", true, 24, true},
		{"client-side failover only", false, 0, true},
	} {
		var calls int64
		o := &Observer{Proxied: tc.proxied, Stats: func(context.Context) (Stats, error) {
			calls++
			if calls == 1 {
				return Stats{Requests: 100}, nil
			}
			return Stats{Requests: 100 + tc.seen}, nil
		}}
		t0 := time.Now()
		o.StageStart(context.Background(), runner.Stage{Name: "main"}, t0)
		for i := range 24 {
			sent := t0.Add(time.Duration(i) * 10 * time.Millisecond)
			o.Record("main", &record.Record{Sent: sent, End: sent.Add(5 * time.Millisecond), Attempts: 1})
		}
		sc := &result.Scenario{Name: "main", Load: result.Load{Valid: true}}
		o.StageEnd(runner.Stage{Name: "main"}, sc)
		if sc.Load.Valid != tc.valid || (!tc.valid && (sc.Load.InvalidCause != verdict.CauseNotApplied || !strings.Contains(sc.Load.InvalidReason, "saw none of the stage's 24 requests"))) {
			t.Errorf("%s: load %+v", tc.name, sc.Load)
		}
		r := &result.Result{ThresholdsPassed: true, Scenarios: []result.Scenario{*sc}}
		if err := verdict.Outcome(r, true); (err == nil) != tc.valid || (err != nil && !strings.Contains(err.Error(), "no --allow-invalid accepts faults_not_applied")) {
			t.Errorf("%s: outcome with --allow-invalid: %v", tc.name, err)
		}
	}
}
