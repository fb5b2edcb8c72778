package capacity

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/result"
)

// TestTrialsOfferTheirRate: a trial offers the rate it is named by from
// its first second to its last. An experiment file's ramp, token rate,
// request count, stampede and complexity shaping are left out of the
// trials (with rampFrom: 1 kept, a trial "at 16 req/s" sent 7.8 a second
// and the capacity named 16).
func TestTrialsOfferTheirRate(t *testing.T) {
	exp := &experiment.Experiment{Stages: []experiment.Stage{{Name: "main", Rate: 16, RampFrom: 1,
		Stampede: "every=2s,width=100ms,rate=50", ComplexityShaping: true, Requests: 40}}}
	var got []experiment.Stage
	run := func(_ context.Context, x *experiment.Experiment) (*result.Result, error) {
		got = append(got, x.Stages[0])
		sc, _ := (&server{Knee: 100}).trial(context.Background(), Load{Rate: x.Stages[0].Rate})
		sc.Name = "main"
		return &result.Result{Scenarios: []result.Scenario{*sc}}, nil
	}
	cfg := RunConfig{Method: "adaptive", Criteria: Criteria{Goodput: 0.9}, MinRate: 16, MaxRate: 16, Resolution: 0.05,
		MaxTrials: 3, Repeats: 1, SweepConcurrency: 1, TrialDuration: 4 * time.Second, Out: io.Discard}
	if _, err := Run(context.Background(), exp, cfg, run); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatal("no trial ran")
	}
	for i, s := range got {
		if s.Rate != 16 || s.RampFrom != 0 || s.TokenRate != 0 || s.Stampede != "" || s.ComplexityShaping || s.Requests != 0 || s.Duration != 4*time.Second {
			t.Errorf("trial %d sends %+v: want 16 req/s throughout, for 4 s", i+1, s)
		}
	}
	if exp.Stages[0].RampFrom != 1 {
		t.Error("the experiment itself was changed")
	}
}

// TestInterruptedNamesNoCapacity: a search stopped by an error (a trial
// that could not run, a signal) after rates 1 and 2 req/s passed printed
// "capacity: at least 2 req/s" as if it were a result. It says it was
// interrupted and what its trials showed, and the result is marked.
func TestInterruptedNamesNoCapacity(t *testing.T) {
	exp := &experiment.Experiment{Stages: []experiment.Stage{{Name: "main"}}}
	n := 0
	run := func(ctx context.Context, x *experiment.Experiment) (*result.Result, error) {
		if n++; n == 3 {
			return nil, context.Canceled
		}
		sc, _ := (&server{Knee: 100}).trial(ctx, Load{Rate: x.Stages[0].Rate})
		sc.Name = "main"
		return &result.Result{Scenarios: []result.Scenario{*sc}}, nil
	}
	var out strings.Builder
	cfg := RunConfig{Method: "adaptive", Criteria: Criteria{Goodput: 0.9}, MinRate: 1, MaxRate: 64, Resolution: 0.05,
		MaxTrials: 40, Repeats: 1, SweepConcurrency: 1, TrialDuration: 4 * time.Second, Out: &out}
	res, err := Run(context.Background(), exp, cfg, run)
	if !errors.Is(err, context.Canceled) || res == nil || !res.Interrupted || res.Capacity.Interrupted == "" {
		t.Fatalf("%v, %+v", err, res)
	}
	s := out.String()
	if strings.Contains(s, "capacity: at least") || !strings.Contains(s, "no capacity: the search was interrupted") || !strings.Contains(s, "so far 2 req/s passed (1 of 1 trials)") {
		t.Errorf("summary:\n%s", s)
	}
}
