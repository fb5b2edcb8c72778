package spate_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/spate-dev/spate"
	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/sim"
)

// TestICEFromPlantedEntropy plants a known entropy per turn in the
// simulator's top logprobs (0.5, 1.0 and 1.5 nats on turns 1, 2 and 3)
// and recovers ICE, the standard deviation (n − 1) of the turns' mean
// token entropy over each conversation, 0.5 nats, within 1 %, overall
// and per intent, and as the threshold figure ice.
func TestICEFromPlantedEntropy(t *testing.T) {
	cfg := sim.Deterministic(time.Millisecond, 0, 8)
	cfg.Entropy = &sim.Entropy{PerTurn: []float64{0.5, 1.0, 1.5}}
	s, err := sim.Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	exp := &experiment.Experiment{
		Target: experiment.Target{URL: s.URL, Model: sim.DefaultModel, Logprobs: 5},
		Workload: experiment.Workload{InputTokens: "16", OutputTokens: "8", Turns: &experiment.Turns{Count: "3"},
			Intents: []experiment.Intent{{Name: "a", Weight: 1}, {Name: "b", Weight: 1, Logprobs: 10}}},
		Stages:     []experiment.Stage{{Name: "main", Concurrency: 4, Requests: 20}},
		Thresholds: []experiment.ThresholdSpec{{Expr: "ice > 0.45"}, {Expr: "ice < 0.55"}},
		// Tokens come at once (no ITL): timing is not this test's subject.
		Measurement: experiment.Measurement{AllowInvalid: true},
	}
	res, err := spate.Run(context.Background(), exp)
	if err != nil {
		t.Fatal(err)
	}
	sc := res.Scenarios[0]
	ice := sc.ICE
	if ice == nil {
		t.Fatal("no ICE in the result")
	}
	near := func(v float64) bool { return math.Abs(v-0.5) <= 0.005 }
	if ice.Conversations < 10 || !near(ice.Mean) || !near(ice.P50) || !near(ice.Max) || ice.TailMassMean > 1e-9 || ice.Single != 0 {
		t.Errorf("ICE %+v, want 0.5 nats over the conversations, no tail", ice)
	}
	if math.Abs(ice.MeanEntropy-1.0) > 0.01 {
		t.Errorf("mean entropy %.4f, want 1.0 (the turns' 0.5, 1.0, 1.5)", ice.MeanEntropy)
	}
	for _, name := range []string{"a", "b"} {
		if f, ok := ice.ByIntent[name]; !ok || f.Conversations == 0 || !near(f.Mean) {
			t.Errorf("intent %s: %+v", name, f)
		}
	}
	for _, th := range sc.Thresholds {
		if !th.Pass || !near(th.Value) {
			t.Errorf("threshold %s: pass %v, value %.4f (%s)", th.Expr, th.Pass, th.Value, th.Err)
		}
	}
	t.Logf("ICE mean %.5f over %d conversations, %d turns", ice.Mean, ice.Conversations, ice.Turns)
}

// TestTruncationFromLengthFault cuts 30 % of the simulator's answers short
// (its length fault, seeded) under ignore_eos and finds them: the
// truncation rate, the finish reasons, the tokens dropped, the same
// figures in the input-length bucket, and the thresholds on them.
func TestTruncationFromLengthFault(t *testing.T) {
	cfg := sim.Deterministic(time.Millisecond, 0, 16)
	cfg.Faults.LengthRate = 0.3
	s, err := sim.Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	exp := &experiment.Experiment{
		Target:   experiment.Target{URL: s.URL, Model: sim.DefaultModel, IgnoreEOS: "true"},
		Workload: experiment.Workload{InputTokens: "600", OutputTokens: "16"},
		Stages:   []experiment.Stage{{Name: "main", Concurrency: 4, Requests: 400}},
		Thresholds: []experiment.ThresholdSpec{{Expr: "truncation_rate < 10%"}, {Expr: "truncation_rate{input:512-1k} > 20%"},
			{Expr: "token_drop_rate < 1%"}},
	}
	res, err := spate.Run(context.Background(), exp)
	if err == nil {
		t.Fatal("the run passed: the thresholds on truncation should fail it")
	}
	o := res.Scenarios[0].Output
	if o == nil || o.TruncationRate == nil || o.TokenDropRate == nil {
		t.Fatalf("output %+v", o)
	}
	// 400 answers, each cut with probability 0.3: the rate is within 0.3 ±
	// 0.09 (4 standard deviations); a cut answer keeps 1 to 15 of its 16
	// tokens, half on average, so about 15 % of the tokens are dropped.
	if tr := *o.TruncationRate; math.Abs(tr-0.3) > 0.09 || o.FinishLength != 400 || o.FinishReasons["length"] != 400 {
		t.Errorf("truncation rate %.3f (%d truncated, %d finish length, reasons %v)", tr, o.Truncated, o.FinishLength, o.FinishReasons)
	}
	if dr := *o.TokenDropRate; dr < 0.08 || dr > 0.22 || o.ExactRequests != 400 {
		t.Errorf("token drop rate %.3f over %d exact requests, want about 0.15", dr, o.ExactRequests)
	}
	var found bool
	for _, b := range o.Context {
		if b.Bucket == "512-1k" {
			found = b.Requests == 400 && b.Truncated == o.Truncated && b.Metrics["e2e_ms"].Count > 0
		}
	}
	if !found {
		t.Errorf("no 512-1k bucket with the 400 requests: %+v", o.Context)
	}
	th := res.Scenarios[0].Thresholds
	if len(th) != 3 || th[0].Pass || !th[1].Pass || th[2].Pass {
		t.Errorf("thresholds %+v", th)
	}
	t.Logf("truncation rate %.3f, token drop rate %.3f, finish reasons %v", *o.TruncationRate, *o.TokenDropRate, o.FinishReasons)
}
