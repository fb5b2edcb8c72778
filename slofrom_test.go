package spate_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/spate-dev/spate"
	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/llmtest"
)

// TestThresholdsJudgedFromTheIntendedTime: in an open loop capped at one
// request in flight, requests of 40 ms queue behind each other at 100 req/s.
// From the send every TTFT is about 40 ms; from the intended time the
// backlog grows by 30 ms a request. Thresholds on ttft and goodput are
// judged from the intended time by default (they fail), from the send with
// sloFrom: sent (they pass), and goodput_intended names the twin whatever
// the setting.
func TestThresholdsJudgedFromTheIntendedTime(t *testing.T) {
	if testing.Short() {
		t.Skip("sends load for a second")
	}
	// Each row runs against its own server, side by side with the others:
	// its bounds (40 ms against 150 ms; 100 % and 44 % against 75 %) are
	// far from what a shared CPU moves.
	for _, tc := range []struct {
		from     string
		exprs    []string
		wantPass bool
	}{
		{"", []string{"p50(ttft) < 150ms", "goodput >= 75%"}, false},
		{"sent", []string{"p50(ttft) < 150ms", "goodput >= 75%"}, true},
		{"sent", []string{"goodput_intended >= 75%"}, false},
		{"", []string{"p50(ttft_sent) < 150ms", "goodput_sent >= 75%"}, true},
	} {
		t.Run(fmt.Sprintf("%q %v", tc.from, tc.exprs), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(llmtest.Config{TTFT: 40 * time.Millisecond, ITL: time.Millisecond, Tokens: 2})
			defer srv.Close()
			var specs []experiment.ThresholdSpec
			for _, e := range tc.exprs {
				specs = append(specs, experiment.ThresholdSpec{Expr: e})
			}
			res, err := spate.Run(context.Background(), &experiment.Experiment{
				Target:      experiment.Target{URL: srv.BaseURL(), Model: "m"},
				SLO:         map[string]time.Duration{"ttft": 300 * time.Millisecond},
				Stages:      []experiment.Stage{{Name: "main", Rate: 100, Arrival: "constant", MaxConcurrency: 1, Requests: 25}},
				Thresholds:  specs,
				Measurement: experiment.Measurement{SLOFrom: tc.from, AllowInvalid: true},
			})
			if res == nil {
				t.Fatal(err)
			}
			g := res.Scenarios[0].Goodput
			t.Logf("sloFrom %q %v: passed %v; goodput %.2f from the send, %.2f from the intended time", tc.from, tc.exprs, res.ThresholdsPassed, g.Fraction, g.IntendedFraction)
			if res.ThresholdsPassed != tc.wantPass || (!tc.wantPass && !errors.Is(err, spate.ErrThresholdsFailed)) {
				t.Errorf("sloFrom %q %v: passed %v (err %v), want %v; thresholds %+v", tc.from, tc.exprs, res.ThresholdsPassed, err, tc.wantPass, res.Scenarios[0].Thresholds)
			}
		})
	}
}
