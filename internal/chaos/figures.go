package chaos

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/spate-dev/spate/internal/binomial"
	"github.com/spate-dev/spate/internal/verdict/resilience"
	"github.com/spate-dev/spate/result"
)

// Sample is what the figures need of one measured request.
type Sample struct {
	Sent, End time.Time
	// FirstToken is when the answer's first content arrived (zero: not
	// streamed, End is used).
	FirstToken time.Time
	Failed     bool
	Attempts   int
	Upstream   string
}

// firstToken is when the answer began: its first token, or its end.
func (s Sample) firstToken() time.Time {
	if s.FirstToken.IsZero() {
		return s.End
	}
	return s.FirstToken
}

// Figure defaults.
const (
	DefaultTMax        = 800 * time.Millisecond
	DefaultRecoveryBin = time.Second
)

// FigureOptions tune Figures.
type FigureOptions struct {
	// Start and End are the stage's; windows are clipped to them.
	Start, End time.Time
	// TMax is MSR's T_max (default 800 ms).
	TMax time.Duration
	// RecoveryBin is the width of the bins recovery is judged on
	// (default 1 s).
	RecoveryBin time.Duration
	// P99Bound is the E2E p99 a recovered bin must be under (the stage's
	// E2E SLO); 0: 1.5 × the baseline's p99.
	P99Bound time.Duration
	// Injected and Failing are the proxy's counts for the stage.
	Injected map[string]int64
	Failing  int64
}

// Figures computes the chaos section of a stage from its requests and the
// fault windows that overlapped it.
func Figures(samples []Sample, windows []Window, o FigureOptions) *result.Chaos {
	if o.TMax <= 0 {
		o.TMax = DefaultTMax
	}
	if o.RecoveryBin <= 0 {
		o.RecoveryBin = DefaultRecoveryBin
	}
	c := &result.Chaos{Windows: []result.ChaosWindow{}, Injected: o.Injected, FaultsInjected: o.Failing,
		TMaxMS: ms(o.TMax), RecoveryBinMS: ms(o.RecoveryBin)}
	slices.SortFunc(samples, func(a, b Sample) int { return a.Sent.Compare(b.Sent) })

	// Windows clipped to the stage.
	type span struct{ from, to time.Time }
	spans := make([]span, len(windows))
	for i, w := range windows {
		from, to := w.Start, w.End
		if from.Before(o.Start) {
			from = o.Start
		}
		if to.IsZero() || to.After(o.End) {
			to = o.End
		}
		spans[i] = span{from, to}
	}
	// The baseline is the requests sent outside every failing window
	// before the first one began, or all requests outside failing windows
	// when too few were.
	inFailing := func(t time.Time) bool {
		for i, sp := range spans {
			if windows[i].Failing && !t.Before(sp.from) && t.Before(sp.to) {
				return true
			}
		}
		return false
	}
	var first time.Time
	for i, sp := range spans {
		if windows[i].Failing && (first.IsZero() || sp.from.Before(first)) {
			first = sp.from
		}
	}
	var calm, before []Sample
	for _, s := range samples {
		if inFailing(s.Sent) {
			continue
		}
		calm = append(calm, s)
		if !first.IsZero() && s.Sent.Before(first) {
			before = append(before, s)
		}
	}
	baseline := calm
	if len(before) >= 10 {
		baseline = before
	}
	base := side(baseline)
	bound := o.P99Bound
	if bound <= 0 {
		bound = time.Duration(1.5 * base.E2EP99MS * float64(time.Millisecond))
	}

	failing, failovers, unfinished, unrecovered, unsent := 0, 0, 0, 0, 0
	for i, w := range windows {
		sp := spans[i]
		var inside, outside []Sample
		for _, s := range samples {
			if !s.Sent.Before(sp.from) && s.Sent.Before(sp.to) {
				inside = append(inside, s)
			} else {
				outside = append(outside, s)
			}
		}
		cw := result.ChaosWindow{Faults: w.Faults, Failing: w.Failing,
			StartS: sp.from.Sub(o.Start).Seconds(), EndS: sp.to.Sub(o.Start).Seconds(),
			Inside: side(inside), Outside: side(outside)}
		if cw.Inside.Requests < 30 {
			c.Warnings = append(c.Warnings, fmt.Sprintf("window %d (%s): only %d requests inside: its figures are rough", i, w.Faults, cw.Inside.Requests))
		}
		if w.Failing {
			f, needed, ok := failoverTime(samples, sp.from, sp.to)
			switch {
			case ok:
				cw.FailoverMS = ptr(ms(f))
				failovers++
			case needed:
				unfinished++
				c.Warnings = append(c.Warnings, fmt.Sprintf("window %d: no request the fault reached (sent in it, with a failed attempt) succeeded within the stage: the failover did not complete", i))
			case len(inside) == 0:
				// Nothing was sent while the fault was in force (a client
				// stalled past the whole window, or too light a load): that
				// is no evidence that no failover was needed.
				unsent++
				c.Warnings = append(c.Warnings, fmt.Sprintf("window %d: no request was sent during it: its failover was not measured", i))
			default:
				c.Warnings = append(c.Warnings, fmt.Sprintf("window %d: no request sent during it failed an attempt: no failover was needed", i))
			}
			failing++
			if !w.End.IsZero() && w.End.Before(o.End) {
				// Until the next failing window starts: a recovery is
				// from this fault, not the next.
				until, next := o.End, false
				for _, x := range windows {
					if x.Failing && !x.Start.Before(w.End) && x.Start.Before(until) {
						until, next = x.Start, true
					}
				}
				switch r, st := recovery(samples, w.End, until, next, o.RecoveryBin, base.ErrorRate, bound); st {
				case resilience.Recovered:
					cw.RecoveryMS = ptr(ms(r))
				case resilience.NotRecovered:
					unrecovered++
					c.Warnings = append(c.Warnings, fmt.Sprintf("window %d: not recovered by the end of the stage or the next fault (error rate surely over %.3f, or E2E p99 over %v, in its last %v bin)", i, base.ErrorRate+0.01, bound, o.RecoveryBin))
				default:
					unrecovered++
					c.Warnings = append(c.Warnings, fmt.Sprintf("window %d: recovery not measured: the stage ended (or the next fault came) too soon after it, under one %v bin after its last bad bin, to tell", i, o.RecoveryBin))
				}
			}
			// The stage's figures are its slowest window's.
			if cw.FailoverMS != nil && (c.FailoverMS == nil || *cw.FailoverMS > *c.FailoverMS) {
				c.FailoverMS = cw.FailoverMS
			}
			if cw.RecoveryMS != nil && (c.RecoveryMS == nil || *cw.RecoveryMS > *c.RecoveryMS) {
				c.RecoveryMS = cw.RecoveryMS
			}
		}
		c.Windows = append(c.Windows, cw)
	}

	ups := map[string]int{}
	for _, s := range samples {
		if s.Failed {
			c.ErrorsSeen++
		}
		c.Attempts += max(s.Attempts, 1)
		if s.Attempts > 1 {
			c.Retried++
			c.RetryAttempts += s.Attempts - 1
			if !s.Failed {
				c.RetriedOK++
			}
		}
		if s.Upstream != "" {
			ups[s.Upstream]++
		}
	}
	if len(ups) > 0 {
		c.Upstreams = ups
	}
	if o.Failing > 0 {
		c.ErrorAmplification = ptr(float64(c.ErrorsSeen) / float64(o.Failing))
	}
	if c.RetryAttempts > 0 {
		// R_retry per retry attempt (seed 004 §3.3): the successful
		// responses over the retry requests sent; a request retried twice
		// that succeeded is one success of two attempts.
		c.RRetry = ptr(float64(c.RetriedOK) / float64(c.RetryAttempts))
	}
	switch {
	case failing == 0:
		c.MSRReason = "no failing fault window in the stage: nothing to fail over from"
	case failovers == 0 && unfinished == 0 && unsent == failing:
		c.MSRReason = "no request was sent during the fault windows: the failover was not measured"
	case failovers == 0 && unfinished == 0:
		c.MSRReason = "no request sent during the fault windows failed an attempt: no failover was needed"
	case c.RRetry == nil:
		c.MSRReason = "no request was retried or failed over: MSR needs R_retry (run with --retries, or --targets with --policy failover)"
	case unfinished > 0:
		// A window's fault reached requests and none that was retried
		// succeeded: its T_failover is past the stage, its factor 0, and
		// the stage's MSR is its worst window's.
		c.MSR, c.MSRGrade = ptr(0.0), Grade(0)
		c.MSRReason = "the failover did not complete within the stage: MSR 0"
		if failing > 1 {
			c.MSRReason = fmt.Sprintf("the failover did not complete within the stage in %d of its %d failing windows: MSR 0", unfinished, failing)
		}
	default:
		m := MSR(time.Duration(*c.FailoverMS*float64(time.Millisecond)), o.TMax, *c.RRetry)
		c.MSR, c.MSRGrade = ptr(m), Grade(m)
	}
	if c.MSR == nil {
		c.Warnings = append(c.Warnings, "no MSR: "+c.MSRReason)
	}
	if unrecovered > 0 {
		c.RecoveryMS = nil // a window never recovered: no recovery time
	}
	return c
}

// MSR is (1 − min(failover/tMax, 1)) × rRetry (docs/design.md §3).
func MSR(failover, tMax time.Duration, rRetry float64) float64 {
	return (1 - math.Min(float64(failover)/float64(tMax), 1)) * rRetry
}

// Grade names an MSR: high (≥ 0.9), medium (≥ 0.7) or low.
func Grade(msr float64) string {
	switch {
	case msr >= 0.9:
		return "high"
	case msr >= 0.7:
		return "medium"
	}
	return "low"
}

// failoverTime is T_failover of a fault window [onset, end): from the
// onset to the first token of the first successful response among the
// requests the fault reached, those sent in the window that took more than
// one attempt (a request that went straight to a healthy upstream did not
// fail over). needed says some request sent in the window failed an
// attempt; ok that one of them succeeded.
func failoverTime(samples []Sample, onset, end time.Time) (d time.Duration, needed, ok bool) {
	var best time.Time
	for _, s := range samples {
		if s.Sent.Before(onset) || !s.Sent.Before(end) {
			continue
		}
		if s.Attempts <= 1 {
			needed = needed || s.Failed
			continue
		}
		needed = true
		if s.Failed {
			continue
		}
		if t := s.firstToken(); best.IsZero() || t.Before(best) {
			best = t
		}
	}
	if best.IsZero() {
		return 0, needed, false
	}
	return best.Sub(onset), true, true
}

// recovery is the time from a fault's end until the service is back and
// stays back, by the one definition spate has (resilience.RecoveryStatus,
// the resilience verdict's): requests are put in bins of bin by when they
// were sent, from end to stageEnd (next: stageEnd is the next fault's
// start, and a request still running then is that fault's, left out); a
// bin is bad when its E2E p99 is over
// bound or its error rate is surely (Wilson, 99 %) over the baseline's
// plus one point; the recovery is the start of the first bin after the
// last bad one. status says when there is none: not recovered (the last
// bin was bad) or not measured (the stage ended too soon to tell).
func recovery(samples []Sample, end, stageEnd time.Time, next bool, bin time.Duration, baseErr float64, bound time.Duration) (time.Duration, int) {
	if bin <= 0 || !end.Before(stageEnd) {
		return 0, resilience.Unmeasured
	}
	// Whole bins, and a shorter one at the end when the time does not
	// divide: a recovery first seen in it is under one bin long.
	whole := int(stageEnd.Sub(end) / bin)
	n := int((stageEnd.Sub(end) + bin - 1) / bin)
	p99 := make([]float64, n)
	weights := make([]int, n)
	errs := &resilience.Errors{Done: make([]int, n), Failed: make([]int, n), Max: baseErr + 0.01}
	e2e := make([][]float64, n)
	for _, s := range samples {
		if s.Sent.Before(end) || !s.Sent.Before(stageEnd) || next && s.End.After(stageEnd) {
			continue
		}
		b := int(s.Sent.Sub(end) / bin)
		errs.Done[b]++
		if s.Failed {
			errs.Failed[b]++
			continue
		}
		e2e[b] = append(e2e[b], ms(s.End.Sub(s.Sent)))
	}
	for b, v := range e2e {
		if len(v) == 0 {
			continue
		}
		slices.Sort(v)
		// A p99 of 0 ms reads as "no figure" (resilience.Windowed).
		p99[b], weights[b] = math.Max(rank(v, 0.99), 1e-9), len(v)
	}
	slo := math.Inf(1)
	if bound > 0 {
		slo = ms(bound)
	}
	bins, st := resilience.RecoveryStatus(p99, weights, errs, 0, 1, slo)
	if st == resilience.Recovered && bins >= whole && bins > 0 {
		return 0, resilience.Unmeasured
	}
	return time.Duration(bins) * bin, st
}

// side summarises a set of requests.
func side(ss []Sample) result.ChaosSide {
	var s result.ChaosSide
	var e2e []float64
	for _, x := range ss {
		s.Requests++
		if x.Failed {
			s.Errors++
		} else {
			e2e = append(e2e, ms(x.End.Sub(x.Sent)))
		}
	}
	if s.Requests > 0 {
		s.ErrorRate = float64(s.Errors) / float64(s.Requests)
		lo, hi := binomial.Wilson(s.Errors, s.Requests, 0.95)
		s.ErrorRateCI95 = [2]float64{lo, hi}
	}
	if len(e2e) > 0 {
		slices.Sort(e2e)
		s.E2EP50MS, s.E2EP99MS = rank(e2e, 0.50), rank(e2e, 0.99)
	}
	return s
}

// rank is the nearest-rank percentile of sorted values.
func rank(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(min(i, len(sorted)-1), 0)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ptr[T any](v T) *T { return &v }
