// Package capacity finds how much load a server takes under its SLOs: an
// adaptive search (exponential, then bisection) for the highest open-loop
// rate whose trials pass (the server completes what it is offered, its
// queue does not grow, and the goodput fraction meets a target), whose
// bracket's ends are decided by repeating their trials (a sequential test
// on their pass/fail, and their goodput, with that of the trials just
// above, surely at the target), reported with a confidence interval of
// the rate at which trials pass half the time; the knee of a ramp by the
// same rule for one trial (Knee); and a sweep
// (closed-loop maximum, then open-loop steps up to it). Trials are run by
// the caller's function, so the package holds the search and the verdicts
// only.
//
// Stage: verdict (over many runs).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package capacity

import (
	"math"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/spate-dev/spate/internal/verdict/resilience"
	"github.com/spate-dev/spate/result"
)

// Reasons a trial fails, or cannot be judged.
const (
	ReasonGoodput       = "goodput"        // goodput fraction under the target
	ReasonInvalid       = "invalid"        // load.valid false: the schedule was not kept
	ReasonErrors        = "errors"         // no request succeeded
	ReasonUnderdelivery = "underdelivered" // the server completed well under the rate offered
	ReasonQueueGrowing  = "queue_growing"  // requests in flight grew through the trial
	ReasonTTFTGrowing   = "ttft_growing"   // TTFT grew through the trial: a queue without bound
	ReasonClosedLoop    = "closed_loop"    // a sweep's closed-loop measurement, not judged
	// ReasonImprecise marks a trial whose goodput verdict responses read
	// late could turn (result.MeasurementError: the target lies inside the
	// goodput's range): run again, as an invalid one is.
	ReasonImprecise = "imprecise"
	// ReasonTooShort marks a trial that cannot tell: too few whole seconds
	// of steady completions (the trial is short beside its requests).
	ReasonTooShort = "too_short"
)

// DefaultMinDelivered is the least fraction of the requests sent that a
// passing trial's server completes while the load runs: a capacity found
// is at most 1/0.95 ≈ 1.05 × what the server completes at that load.
const DefaultMinDelivered = 0.95

// DeliveryConfidence is the one-sided confidence at which a trial is
// judged to underdeliver: it fails only when the fraction of its sends
// the server completed is surely under MinDelivered (see underdelivered).
const DeliveryConfidence = 0.95

// MinSteadySeconds is the fewest whole seconds of steady completions a
// trial needs to be judged (Assessment.SteadyS).
const MinSteadySeconds = 2

// Criteria say when a trial passes.
type Criteria struct {
	// Goodput is the fraction of requests that must succeed within every
	// SLO (default 0.95).
	Goodput float64
	// MinDelivered is the least fraction of the requests offered that the
	// server must complete, successfully, while the load runs (default
	// DefaultMinDelivered; see Assess).
	MinDelivered float64
	// MaxTTFTGrowth is the most TTFT p50 may grow over a trial, as a
	// multiple of its level (least-squares slope × trial length / median;
	// default 1: doubling). When the stage has a ttft SLO the growth must
	// also exceed half of it, so that jitter on a small TTFT is not taken
	// for a queue.
	MaxTTFTGrowth float64
	// Warmup is the trials' warm-up, whose seconds are left out of the
	// steady seconds, and Duration their measured duration after it: the
	// seconds of sending up to warm-up + duration are whole (0: the second
	// of the last send is taken as partial).
	Warmup, Duration time.Duration
	// ServiceTime, when known, is the lag from a send to its completion
	// on an unloaded server (the search takes it from the trials that
	// passed): a trial in which nothing completed while the load ran — a
	// server that shares itself among too many requests finishes none
	// early — is judged from it (and cannot tell without it). A trial
	// with completions is judged from its own lag, since a batching
	// server's E2E lengthens with its load long before it stops keeping
	// up.
	ServiceTime time.Duration
}

func (c Criteria) withDefaults() Criteria {
	if c.Goodput <= 0 {
		c.Goodput = 0.95
	}
	if c.MinDelivered <= 0 {
		c.MinDelivered = DefaultMinDelivered
	}
	if c.MaxTTFTGrowth <= 0 {
		c.MaxTTFTGrowth = 1
	}
	return c
}

// Assessment is the verdict on one trial and the figures it rests on.
type Assessment struct {
	Pass bool
	// Reason says why the trial failed, or (CannotTell) why it cannot be
	// judged.
	Reason     string
	CannotTell bool
	// SteadyS is the number of steady seconds the delivery was judged
	// on, CompletedRPS the successes per second the server completed in
	// them, and Delivered those successes over the sends they answer
	// (see delivery).
	SteadyS      int
	CompletedRPS float64
	Delivered    float64
	// QueueGrowth is how many requests in flight grew by over those
	// seconds (least-squares slope × their length), and QueueGrowthSE
	// its standard error (0 with fewer than 4 seconds: not estimated).
	QueueGrowth, QueueGrowthSE float64
	// WithinNoise marks a passing trial that completed under MinDelivered
	// of its sends (Delivered), but not surely (DeliveryConfidence): its
	// shortfall is within the count's sampling noise, and the delivery
	// criterion passes.
	WithinNoise bool
	// minDelivered is the criterion WithinNoise fell short of.
	minDelivered float64
	// queueFitSE is QueueGrowthSE from the fit's residuals alone.
	queueFitSE float64
	// completed and sent are the counts Delivered is made of, and
	// sentVar the variance of sent (see sentIn).
	completed int
	sent      float64
	sentVar   float64
	// Score is how far the trial is from failing: the smallest of
	// Delivered / MinDelivered and goodput / Goodput (≥ 1 passes them).
	Score float64
}

// Judge says whether a trial at the given open-loop rate (0 for closed
// loop) passed, and why not (see Assess).
func Judge(sc *result.Scenario, rate float64, c Criteria) (pass bool, reason string) {
	a := Assess(sc, rate, c)
	return a.Pass, a.Reason
}

// Assess judges a trial at the given open-loop rate (0 for closed loop).
// It passes when its measurement is valid, some request succeeded, and,
// for open loop, the server kept up with what it was offered over the
// trial's steady seconds — it completed, successfully, MinDelivered of
// the requests sent (the sends shifted by the fastest requests' E2E, so
// that a completion is set against the send it answers), or fell short of
// it by no more than the counts' sampling noise (see underdelivered), the
// requests in flight did not grow by more than 10 % of those offered in
// the meantime (at least 3), and TTFT did not grow through the trial —
// and the goodput fraction met its target. A trial with fewer than
// MinSteadySeconds steady seconds cannot tell.
func Assess(sc *result.Scenario, rate float64, c Criteria) Assessment {
	c = c.withDefaults()
	a := Assessment{Score: sc.Goodput.Fraction / c.Goodput}
	fail := func(reason string) Assessment {
		a.Reason = reason
		return a
	}
	if rate > 0 {
		// The figures are computed for every trial, shown also when it
		// is not judged.
		delivery(&a, sc, c)
	}
	switch {
	case sc.Requests.Succeeded == 0:
		a.Score = 0
		return fail(ReasonErrors)
	case !sc.Load.Valid:
		return fail(ReasonInvalid)
	}
	if rate > 0 {
		if a.SteadyS < MinSteadySeconds {
			a.CannotTell = true
			return fail(ReasonTooShort)
		}
		a.Score = math.Min(a.Score, a.Delivered/c.MinDelivered)
		offered := asked(sc, rate) * float64(a.SteadyS)
		switch {
		case underdelivered(a, c.MinDelivered):
			return fail(ReasonUnderdelivery)
		case queueGrowing(a, offered):
			return fail(ReasonQueueGrowing)
		}
		// Every passing shortfall the trial's line shows is labelled,
		// also one within a single request of the criterion.
		a.WithinNoise, a.minDelivered = a.Delivered < c.MinDelivered, c.MinDelivered
	}
	switch {
	case growing(sc, c.MaxTTFTGrowth):
		return fail(ReasonTTFTGrowing)
	case imprecise(sc, c.Goodput):
		return fail(ReasonImprecise)
	case sc.Goodput.Fraction < c.Goodput:
		return fail(ReasonGoodput)
	}
	a.Pass = true
	return a
}

// underdelivered says whether the server surely completes under the
// fraction d of what it is sent, judged on a's counts: the completions of
// the steady seconds and the sends they answer (see delivery). It is a
// one-sided score test at DeliveryConfidence: the shortfall from d × sent
// is set against its sampling noise if the server completed exactly d of
// its sends — each send completing or not (binomial), plus where in the
// seconds cut by the window's ends the sends fell (sentIn). One request is
// allowed for the seconds' edges, where a completion and the send it
// answers may fall in different seconds. A shortfall within the noise
// passes: the search repeats the trials near the boundary (see decide), so
// a rate whose trials fall short by a little fails there as often as it
// passes.
func underdelivered(a Assessment, d float64) bool {
	short := d*a.sent - float64(a.completed+1)
	if short <= 0 {
		return false
	}
	sd := math.Sqrt(a.sent*d*(1-d) + d*d*a.sentVar)
	return short > deliveryZ*sd
}

// QueueConfidence is the one-sided confidence at which a trial's requests
// in flight are judged to grow (see queueGrowing): higher than
// DeliveryConfidence, since a ramp judges each of its stages once and a
// false alarm at a low stage moves its knee down (the delivery check
// catches a server falling behind in any case).
const QueueConfidence = 0.99

// queueGrowing says whether the requests in flight grew through the
// trial by more than 10 % of those offered in the meantime (at least 3),
// and surely so: by more than the noise allows at QueueConfidence
// (Student's t, the standard error from growthSE).
// Requests in flight swing by several with Poisson sends and batched
// completions: at 4 req/s of 2 s requests a burst of sends in the last
// seconds "grew" them by 5 in a 12 s stage of a server that kept up.
// With fewer than 4 steady seconds the noise is not estimated and the
// growth alone decides.
func queueGrowing(a Assessment, offered float64) bool {
	if a.QueueGrowth <= math.Max(3, 0.1*offered) {
		return false
	}
	if a.QueueGrowthSE <= 0 || a.SteadyS < 4 {
		return true
	}
	q := queueZ // the standard error of a server that kept up: its variance known
	if a.queueFitSE > a.QueueGrowthSE*(1-1e-9) {
		// the residuals' own: estimated, with n − 2 degrees of freedom
		q = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(a.SteadyS - 2)}.Quantile(QueueConfidence)
	}
	return a.QueueGrowth > q*a.QueueGrowthSE
}

// growthSE is the standard error of the growth of requests in flight
// fitted to flight (one value a second, the least-squares slope given,
// times their length), the larger of two estimates: the fit's residuals,
// and what a server that kept up would show — requests in flight
// then swing as a Poisson count (variance its mean) correlated over the
// requests' service time (tau seconds, at least 1), which the residuals
// of a dozen seconds understate; the slope of n such seconds has a
// variance of about 12·var·tau/n³. fit is the residuals' estimate alone.
// Both are 0 with fewer than 4 seconds.
func growthSE(flight []float64, slope, tau float64) (se, fit float64) {
	n := float64(len(flight))
	if len(flight) < 4 {
		return 0, 0
	}
	mean := 0.0
	for _, y := range flight {
		mean += y
	}
	mean /= n
	model := math.Sqrt(12 * math.Max(mean, 1) * math.Max(tau, 1) / (n * n * n))
	fit = slopeSE(flight, slope) * n
	return math.Max(fit, model*n), fit
}

// slopeSE is the standard error of the least-squares slope of ys against
// their index, given the slope: 0 with fewer than 4 values.
func slopeSE(ys []float64, slope float64) float64 {
	n := float64(len(ys))
	if len(ys) < 4 {
		return 0
	}
	var mx, my float64
	for i, y := range ys {
		mx += float64(i)
		my += y
	}
	mx, my = mx/n, my/n
	var sxx, rss float64
	for i, y := range ys {
		dx := float64(i) - mx
		sxx += dx * dx
		r := y - my - slope*dx
		rss += r * r
	}
	if sxx == 0 {
		return 0
	}
	return math.Sqrt(rss / (n - 2) / sxx)
}

// queueZ is the standard normal quantile of QueueConfidence.
var queueZ = distuv.UnitNormal.Quantile(QueueConfidence)

// deliveryZ is the standard normal quantile of DeliveryConfidence.
var deliveryZ = distuv.UnitNormal.Quantile(DeliveryConfidence)

// imprecise says whether the goodput target lies inside the range the
// trial's true goodput lies in (its measurement error): at one end of it
// the trial passes, at the other it fails.
func imprecise(sc *result.Scenario, target float64) bool {
	me := sc.MeasurementError
	return me != nil && me.Goodput.Low < target && me.Goodput.High >= target
}

// Rerun says whether a trial judged a must be run again before its rate
// is judged: its measurement was invalid or too imprecise to decide.
func Rerun(a Assessment) bool {
	return a.Reason == ReasonInvalid || a.Reason == ReasonImprecise
}

// delivery fills the delivery figures of an open-loop trial from its
// per-second series. The steady seconds run from the first whole second
// after the lag from a send to its completion (the fastest second's E2E
// p50 in the trial, which a queue building up through the trial does not
// lengthen; Criteria.ServiceTime when nothing completed while the load
// ran) to the end of sending; the server's completions in them are set
// against the sends they answer, the same seconds shifted back by that
// lag. Requests
// whose E2E spreads widely fill the pipeline slowly, which lowers the
// first seconds' rate: trials should last several times their requests'
// E2E. The queue's growth is the slope of requests in flight over the
// same seconds.
func delivery(a *Assessment, sc *result.Scenario, c Criteria) {
	s := &sc.Series
	end := loadEnd(s)
	if c.Duration > 0 {
		// The seconds up to the end of sending are whole, the last too.
		end = min(end+1, int((c.Warmup+c.Duration)/time.Second))
	}
	if end <= 0 {
		return
	}
	lag := fastestE2E(s, end)
	if lag == 0 {
		// Nothing completed while the load ran: judged from the service
		// time of a trial that kept up, or, before one, not at all.
		if lag = float64(c.ServiceTime) / float64(time.Millisecond); lag == 0 {
			return
		}
	}
	from := int(math.Ceil(lag / 1000))
	a.SteadyS = max(end-from, 0)
	if a.SteadyS == 0 {
		return
	}
	ok := 0
	for i := from; i < end; i++ {
		ok += at(s.CompletedPerS, i) - at(s.ErrorsPerS, i)
	}
	a.CompletedRPS = float64(ok) / float64(a.SteadyS)
	// The completions of the steady seconds answer the sends of the same
	// seconds shifted back by the lag: a Poisson schedule sends more in
	// some seconds than others, and set against the trial's mean send
	// rate those swings read as a server falling behind (an unbounded
	// server "delivered" 93 % at 40 req/s in 3 s trials).
	shift := lag / 1000
	a.completed = ok
	a.sent, a.sentVar = sentIn(s.SentPerS, float64(from)-shift, float64(end)-shift)
	if a.sent > 0 {
		a.Delivered = float64(ok) / a.sent
	}
	if a.SteadyS >= 2 {
		flight := make([]float64, 0, a.SteadyS)
		for i := from; i < end; i++ {
			flight = append(flight, float64(at(s.InFlight, i))+1) // Slope leaves out values ≤ 0
		}
		if slope, _, ok := resilience.Slope(flight, nil, len(flight)); ok {
			a.QueueGrowth = slope * float64(len(flight))
			a.QueueGrowthSE, a.queueFitSE = growthSE(flight, slope, lag/1000)
		}
	}
}

// FastestE2E is the smallest per-second E2E p50 (ms) of a trial's seconds
// of sending: its service time when it was not overloaded.
func FastestE2E(sc *result.Scenario) time.Duration {
	ms := fastestE2E(&sc.Series, loadEnd(&sc.Series)+1)
	return time.Duration(ms * float64(time.Millisecond))
}

// fastestE2E is the smallest per-second E2E p50 (ms) in seconds [0, end).
func fastestE2E(s *result.Series, end int) float64 {
	best := 0.0
	for i := 0; i < end && i < len(s.E2Ep50ms); i++ {
		if v := s.E2Ep50ms[i]; v > 0 && (best == 0 || v < best) {
			best = v
		}
	}
	return best
}

// loadEnd is the end (exclusive) of the whole seconds of sending: the
// second of the last send is partial and left out.
func loadEnd(s *result.Series) int {
	for i := len(s.SentPerS) - 1; i >= 0; i-- {
		if s.SentPerS[i] > 0 {
			return i
		}
	}
	return 0
}

// sentIn is the number of sends in the seconds [from, to), counting a
// second cut by either end in proportion, since the series has no finer
// grain, and the variance that puts on the count: where in a cut second
// its sends fell is not known, each falling inside with the probability
// of the part inside.
func sentIn(sent []int, from, to float64) (n, variance float64) {
	for i := int(math.Floor(from)); float64(i) < to; i++ {
		f := math.Min(to, float64(i+1)) - math.Max(from, float64(i))
		if f > 0 {
			n += f * float64(at(sent, i))
			variance += f * (1 - f) * float64(at(sent, i))
		}
	}
	return n, variance
}

func at(xs []int, i int) int {
	if i >= 0 && i < len(xs) {
		return xs[i]
	}
	return 0
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
	n := min(loadEnd(s), len(s.TTFTp50ms))
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

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
