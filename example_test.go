package spate_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spate-dev/spate"
	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/sim"
)

// Run a two-stage experiment built in Go against the built-in simulator,
// started in this process on a free loopback port, and gate on thresholds.
func Example() {
	// A simulator whose every response takes 10 ms to the first token,
	// then 1 ms a token, 4 tokens.
	s, err := sim.Start(sim.Deterministic(10*time.Millisecond, time.Millisecond, 4), "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	exp := &experiment.Experiment{
		Target:   experiment.Target{URL: s.URL, Model: sim.DefaultModel},
		Workload: experiment.Workload{InputTokens: "64", OutputTokens: "4"},
		SLO:      map[string]time.Duration{"ttft": time.Second},
		Stages: []experiment.Stage{
			{Name: "baseline", Concurrency: 2, Requests: 10},            // closed loop
			{Name: "peak", Rate: 40, Arrival: "constant", Requests: 20}, // open loop
		},
		Thresholds: []experiment.ThresholdSpec{{Expr: "error_rate < 1%"}, {Expr: "p99(ttft) < 2s"}},
		// What this example prints does not rest on timestamps: on a
		// machine too busy for spate to vouch for its timings, Run would
		// otherwise return ErrUntrustworthy (spate exits 4).
		Measurement: experiment.Measurement{AllowInvalid: true},
	}
	res, err := spate.Run(context.Background(), exp)
	if err != nil && !errors.Is(err, spate.ErrThresholdsFailed) {
		fmt.Println("run:", err)
		return
	}
	for _, sc := range res.Scenarios {
		fmt.Printf("%s: %d of %d requests succeeded, %d output tokens each\n",
			sc.Name, sc.Requests.Succeeded, sc.Requests.Total, int(sc.Metrics["output_tokens"].Max))
	}
	fmt.Println("thresholds passed:", res.ThresholdsPassed)
	// Output:
	// baseline: 10 of 10 requests succeeded, 4 output tokens each
	// peak: 20 of 20 requests succeeded, 4 output tokens each
	// thresholds passed: true
}
