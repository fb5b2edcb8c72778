package llmtest

import "github.com/spate-dev/spate/result"

// KeptUp fills sc's per-second series as those of a server that kept up
// with its offered rate for secs seconds: sc.Load.TargetRate requests sent
// each second (rounded), as many completed, each in 100 ms, a steady two
// in flight, then a second of drain. For tests of what reads a stage's
// series (a ramp's knee, capacity's rule) with stages built by hand.
func KeptUp(sc *result.Scenario, secs int) {
	n := int(sc.Load.TargetRate + 0.5)
	s := &sc.Series
	for i := range secs + 1 {
		sent := n
		if i == secs {
			sent = 0 // the drain
		}
		s.SentPerS = append(s.SentPerS, sent)
		s.CompletedPerS = append(s.CompletedPerS, sent)
		s.ErrorsPerS = append(s.ErrorsPerS, 0)
		s.InFlight = append(s.InFlight, 2)
		s.E2Ep50ms = append(s.E2Ep50ms, 100)
		s.TTFTp50ms = append(s.TTFTp50ms, 50)
	}
}

// Headlines are results a report leads with something different for (see
// package headline): a ramp whose knee is rate-4 (rate-2, rate-4 and
// rate-8 at goodput 99, 95 and 50 %), one with no knee (every stage at
// 40 %), a capacity search that found 20 req/s in [18, 22] (trials 2 and
// 4 at it) and a single stage; every stage's server kept up (KeptUp), the
// SLO ttft 500 ms (2 s for the capacity's).
type Headlines struct {
	Knee, NoKnee, Capacity, Single *result.Result
}

// HeadlineResults returns new Headlines.
func HeadlineResults() Headlines {
	stage := func(name string, rate, good float64) result.Scenario {
		sc := result.Scenario{
			Name:     name,
			Load:     result.Load{Mode: "open", TargetRate: rate, AchievedRate: rate, Valid: true},
			Requests: result.Requests{Total: 100, Succeeded: 100},
			Goodput:  result.Goodput{Fraction: good, SLOms: map[string]float64{"ttft": 500}},
		}
		KeptUp(&sc, 6)
		return sc
	}
	ramp := func() *result.Result {
		return &result.Result{Scenarios: []result.Scenario{stage("rate-2", 2, 0.99), stage("rate-4", 4, 0.95), stage("rate-8", 8, 0.5)}}
	}
	h := Headlines{Knee: ramp(), NoKnee: ramp(), Single: ramp()}
	for i := range h.NoKnee.Scenarios {
		h.NoKnee.Scenarios[i].Goodput.Fraction = 0.4
	}
	h.Single.Scenarios = h.Single.Scenarios[:1]
	h.Capacity = &result.Result{Scenarios: []result.Scenario{stage("trial-1", 10, 1), stage("trial-2", 20, 0.95), stage("trial-3", 24, 0.6), stage("trial-4", 20, 0.93)},
		Capacity: &result.Capacity{Method: "adaptive", GoodputTarget: 0.9, SLOms: map[string]float64{"ttft": 2000},
			RateRPS: 20, Confidence: 0.95, RateTrials: [2]int{2, 2}, LowRPS: 20, HighRPS: 24,
			Interval: &result.CapacityInterval{LowRPS: 18, HighRPS: 22, EstimateRPS: 20.4, Confidence: 0.95},
			Trials: []result.CapacityTrial{{Scenario: "trial-1", RateRPS: 10, Pass: true}, {Scenario: "trial-2", RateRPS: 20, Pass: true},
				{Scenario: "trial-3", RateRPS: 24}, {Scenario: "trial-4", RateRPS: 20, Pass: true}}}}
	return h
}
