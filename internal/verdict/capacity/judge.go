// Package capacity finds how much load a server takes under its SLOs: an
// adaptive search (exponential, then bisection) for the highest open-loop
// rate at which the goodput fraction meets a target, reported as an
// interval [highest passing, lowest failing], and a sweep (closed-loop
// maximum, then open-loop steps up to it). Trials are run by the caller's
// function, so the package holds the search and the verdicts only.
//
// Stage: verdict (over many runs).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package capacity

import (
	"github.com/spate-dev/spate/internal/verdict/resilience"
	"github.com/spate-dev/spate/result"
)

// Reasons a trial fails.
const (
	ReasonGoodput       = "goodput"        // goodput fraction under the target
	ReasonInvalid       = "invalid"        // load.valid false: the schedule was not kept
	ReasonErrors        = "errors"         // no request succeeded
	ReasonUnderdelivery = "underdelivered" // achieved rate well under the rate asked for
	ReasonTTFTGrowing   = "ttft_growing"   // TTFT grew through the trial: a queue without bound
	ReasonClosedLoop    = "closed_loop"    // a sweep's closed-loop measurement, not judged
)

// Criteria say when a trial passes.
type Criteria struct {
	// Goodput is the fraction of requests that must succeed within every
	// SLO (default 0.95).
	Goodput float64
	// MinDelivered is the least achieved/asked rate of an open-loop trial
	// (default 0.9). The rate asked for is the schedule's own rate when the
	// result has it (a Poisson schedule's realised rate), else the target.
	MinDelivered float64
	// MaxTTFTGrowth is the most TTFT p50 may grow over a trial, as a
	// multiple of its level (least-squares slope × trial length / median;
	// default 1: doubling). When the stage has a ttft SLO the growth must
	// also exceed half of it, so that jitter on a small TTFT is not taken
	// for a queue.
	MaxTTFTGrowth float64
}

func (c Criteria) withDefaults() Criteria {
	if c.Goodput <= 0 {
		c.Goodput = 0.95
	}
	if c.MinDelivered <= 0 {
		c.MinDelivered = 0.9
	}
	if c.MaxTTFTGrowth <= 0 {
		c.MaxTTFTGrowth = 1
	}
	return c
}

// Judge says whether a trial at the given open-loop rate (0 for closed
// loop) passed, and why not. A trial passes when its measurement is valid,
// some request succeeded and the goodput fraction met the target — the
// condition of metrics.Knee — and, for open loop, the server took the rate
// asked for without a queue growing through the trial.
func Judge(sc *result.Scenario, rate float64, c Criteria) (pass bool, reason string) {
	c = c.withDefaults()
	switch {
	case sc.Requests.Succeeded == 0:
		return false, ReasonErrors
	case !sc.Load.Valid:
		return false, ReasonInvalid
	case rate > 0 && sc.Load.AchievedRate < c.MinDelivered*asked(sc, rate):
		return false, ReasonUnderdelivery
	case growing(sc, c.MaxTTFTGrowth):
		return false, ReasonTTFTGrowing
	case sc.Goodput.Fraction < c.Goodput:
		return false, ReasonGoodput
	}
	return true, ""
}

// growing says whether TTFT grew through the trial beyond the criteria.
func growing(sc *result.Scenario, maxGrowth float64) bool {
	rel, abs := ttftGrowth(&sc.Series)
	return rel > maxGrowth && abs > sc.Goodput.SLOms["ttft"]/2
}

// ttftGrowth is how much TTFT p50 grew over the seconds of load, relative
// to its median: the least-squares slope over the whole trial times its
// length, divided by the median per-second TTFT p50.
// It also returns the growth in milliseconds.
func ttftGrowth(s *result.Series) (rel, ms float64) {
	n := 0
	for i := len(s.SentPerS) - 1; i >= 0; i-- {
		if s.SentPerS[i] > 0 {
			n = i
			break
		}
	}
	n = min(n, len(s.TTFTp50ms))
	if n < 3 {
		return 0, 0
	}
	has := make([]bool, n)
	var vals []float64
	for i := range n {
		has[i] = i < len(s.CompletedPerS) && s.CompletedPerS[i] > 0 && s.TTFTp50ms[i] > 0
		if has[i] {
			vals = append(vals, s.TTFTp50ms[i])
		}
	}
	slope, _, ok := resilience.Slope(s.TTFTp50ms[:n], has, n)
	if !ok || len(vals) == 0 {
		return 0, 0
	}
	med := median(vals)
	if med <= 0 {
		return 0, 0
	}
	return slope * float64(n) / med, slope * float64(n)
}

// asked is the rate an open-loop trial's schedule asked for: the realised
// rate of its arrivals when recorded, else the target rate.
func asked(sc *result.Scenario, rate float64) float64 {
	if sc.Load.ScheduledRate > 0 {
		return sc.Load.ScheduledRate
	}
	return rate
}
