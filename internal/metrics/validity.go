package metrics

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/spate-dev/spate/result"
)

// The validity rule (docs/figures.md, "Is the measurement valid?"): a stage
// is invalid when the load generator changed what the server saw, judged
// on facts a run observes, so that a brief stall of the machine (a few
// late sends) does not make it invalid but a generator that fell behind
// does. Intended-time figures stay the users' truth either way.
//
// Open loop, on every measured send's arrival lag (from the intended time
// to the request fully written, so a server slow to accept counts too):
//
//   - missed_sends: a scheduled request was not sent by the deadline;
//   - rate_short: over the middle 90 % of at least MinJudgedSends sends,
//     the sends came at under RateShortRatio of the scheduled rate;
//   - lag_large: more than max(MinLateSends, LateShare of the sends) were
//     later than the bound, not counting one brief stall: the longest run
//     of late sends in a row, up to max(MinLateSends, StallShare of the
//     sends) of them (a single stall of the machine nudging a few sends);
//   - lag_growing: the lag grew over the stage (least-squares slope with
//     a t statistic over GrowthT) and the median lag of the last tenth of
//     the stage is over the bound.
//
// The bound is the largest of the floor (--lag-bound), GapMultiple times
// the schedule's median gap between sends (a send later than its intended
// time by less than that has at most traded places with a neighbour: the
// arrival process the server saw is the scheduled one) and LatencyShare of
// the latency p50 the stage reports (TTFT, else E2E): a lag is large when
// it is large against both the spacing of the arrivals and the latencies
// measured.
//
// Closed loop, where a slow server slows the load by design (schedule lag
// and send delay do not apply): turnaround_large, more than
// max(MinLateSends, LateShare) of a worker's turnarounds (its previous
// response's end to its next send) over the larger of the floor and
// LatencyShare of the latency p50.
const (
	MinJudgedSends = 20
	RateShortRatio = 0.95
	MinLateSends   = 5
	LateShare      = 0.01
	GrowthT        = 3.0
	LatencyShare   = 0.10
	GapMultiple    = 2.0
	StallShare     = 0.10
)

// The checks of the validity rule, as listed in result.Validity.Failed.
const (
	CheckMissed     = "missed_sends"
	CheckRate       = "rate_short"
	CheckLagLarge   = "lag_large"
	CheckLagGrowing = "lag_growing"
	CheckTurnaround = "turnaround_large"
)

// lagSampleMax bounds the sends a stage keeps for the rule: past it, a
// uniform sample of that many (reservoir sampling, seeded, so a run judges
// the same way twice), and the first that many sends' intended offsets for
// the schedule's median gap.
const lagSampleMax = 1 << 14

// lagSample is a bounded sample of a stage's sends: each one's offset from
// the stage's start (intended, or sent in a closed loop) in seconds and its
// lag (arrival lag, or turnaround) in milliseconds.
type lagSample struct {
	x    []float64
	y    []float32
	head []float64 // the first lagSampleMax offsets, for the median gap
	n    int       // sends seen
	rnd  uint64    // the reservoir's generator state
}

func (s *lagSample) add(x, y float64) {
	s.n++
	if len(s.head) < lagSampleMax {
		s.head = append(s.head, x)
	}
	if len(s.x) < lagSampleMax {
		s.x = append(s.x, x)
		s.y = append(s.y, float32(y))
		return
	}
	// Algorithm R: the n-th send replaces a kept one with probability
	// lagSampleMax/n.
	s.rnd += 0x9e3779b97f4a7c15
	if j := splitmix(s.rnd) % uint64(s.n); j < lagSampleMax {
		s.x[j], s.y[j] = x, float32(y)
	}
}

// scale is how many sends each kept one stands for.
func (s *lagSample) scale() float64 {
	if len(s.x) == 0 {
		return 1
	}
	return float64(s.n) / float64(len(s.x))
}

func splitmix(x uint64) uint64 {
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// judgement is the outcome of the rule on one stage.
type judgement struct {
	valid    bool
	validity result.Validity
	problems []string // what failed, for the reason, with figures
}

// judgeFacts are the facts the rule reads besides the sample.
type judgeFacts struct {
	open         bool
	floorMS      float64
	missed       int
	latencyP50MS float64
}

// judge applies the validity rule to a stage's sample.
func judge(s *lagSample, f judgeFacts) judgement {
	v := result.Validity{FloorMS: f.floorMS, LatencyP50MS: f.latencyP50MS, Sends: s.n, Missed: f.missed}
	var probs []string
	fail := func(check, format string, a ...any) {
		v.Failed = append(v.Failed, check)
		probs = append(probs, fmt.Sprintf(format, a...))
	}
	n := len(s.x)
	bound := max(f.floorMS, LatencyShare*f.latencyP50MS)
	if f.open && len(s.head) > 1 {
		xs := append([]float64(nil), s.head...)
		sort.Float64s(xs)
		gaps := make([]float64, 0, len(xs)-1)
		for i := 1; i < len(xs); i++ {
			gaps = append(gaps, (xs[i]-xs[i-1])*1000)
		}
		v.MedianGapMS = median(gaps)
		bound = max(bound, GapMultiple*v.MedianGapMS)
	}
	v.BoundMS = bound
	late, worst := lateRuns(s, bound)
	v.LateSends = int(math.Round(float64(late) * s.scale()))
	v.WorstStallSends = min(int(math.Round(float64(worst)*s.scale())), max(MinLateSends, int(StallShare*float64(s.n))))
	if n > 0 {
		ys := make([]float64, n)
		for i, y := range s.y {
			ys[i] = float64(y)
		}
		v.LagP99MS = quantile(ys, 0.99)
	}
	tooMany := max(MinLateSends, int(math.Ceil(LateShare*float64(s.n))))
	if !f.open {
		if v.LateSends-v.WorstStallSends > tooMany {
			fail(CheckTurnaround, "%d of %d workers' turnarounds (response end to next send) took over %s (p99 %s)",
				v.LateSends, s.n, ms(bound), ms(v.LagP99MS))
		}
		return judgement{valid: len(v.Failed) == 0, validity: v, problems: probs}
	}
	if f.missed > 0 {
		fail(CheckMissed, "%d scheduled requests were not sent by the stage's deadline", f.missed)
	}
	if n >= MinJudgedSends {
		in := make([]float64, n)
		out := make([]float64, n)
		for i := range s.x {
			in[i], out[i] = s.x[i], s.x[i]+float64(s.y[i])/1000
		}
		sched := quantile(in, 0.95) - quantile(in, 0.05)
		sent := quantile(out, 0.95) - quantile(out, 0.05)
		if sched > 0 && sent > 0 {
			v.RateRatio = sched / sent
			if v.RateRatio < RateShortRatio {
				fail(CheckRate, "sends came at %.1f %% of the scheduled rate (middle 90 %% of sends), under %.0f %%", 100*v.RateRatio, 100*RateShortRatio)
			}
		}
	}
	if v.LateSends-v.WorstStallSends > tooMany {
		fail(CheckLagLarge, "%d of %d sends were later than %s (lag p99 %s), %d of them outside the worst stall",
			v.LateSends, s.n, ms(bound), ms(v.LagP99MS), v.LateSends-v.WorstStallSends)
	}
	if n >= MinJudgedSends {
		slope, t := regress(s.x, s.y)
		v.LagSlopeMSPerS, v.LagSlopeT = slope, t
		lo, hi := minMax(s.x)
		var last []float64
		for i, x := range s.x {
			if x >= lo+0.9*(hi-lo) {
				last = append(last, float64(s.y[i]))
			}
		}
		if len(last) >= MinLateSends {
			v.LastTenthLagMS = median(last)
			if slope > 0 && t > GrowthT && v.LastTenthLagMS > bound {
				fail(CheckLagGrowing, "the lag grew %.1f ms a second (t = %.1f) to a median over the last tenth of the stage of %s",
					slope, t, over(v.LastTenthLagMS, bound))
			}
		}
	}
	return judgement{valid: len(v.Failed) == 0, validity: v, problems: probs}
}

// lateRuns counts the kept sends later than bound, and the longest run of
// them in a row (in order of offset): the worst stall.
func lateRuns(s *lagSample, bound float64) (late, worst int) {
	idx := make([]int, len(s.x))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return s.x[idx[a]] < s.x[idx[b]] })
	run := 0
	for _, i := range idx {
		if float64(s.y[i]) > bound {
			late++
			run++
			worst = max(worst, run)
		} else {
			run = 0
		}
	}
	return late, worst
}

// regress fits y = a + b·x by least squares and returns b and its t
// statistic (0 when it cannot be computed).
func regress(xs []float64, ys []float32) (b, t float64) {
	n := float64(len(xs))
	if n < 3 {
		return 0, 0
	}
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += float64(ys[i])
	}
	mx, my := sx/n, sy/n
	var sxx, sxy, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, float64(ys[i])-my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	if sxx == 0 {
		return 0, 0
	}
	b = sxy / sxx
	res := syy - b*sxy
	if res <= 0 {
		if b > 0 {
			return b, 1e9 // a perfect fit
		}
		return b, 0
	}
	se := math.Sqrt(res / (n - 2) / sxx)
	return b, b / se
}

func minMax(xs []float64) (lo, hi float64) {
	lo, hi = xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// median and quantile sort a copy.
func median(v []float64) float64 { return quantile(v, 0.5) }

func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// ms formats milliseconds with enough digits to tell figures apart.
func ms(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

// over says "figure over bound" with the precision that shows the figure is
// over (never "25.0 ms over 25 ms").
func over(v, bound float64) string {
	for _, f := range []string{"%.0f", "%.1f", "%.2f", "%.3f", "%.4f"} {
		a, b := fmt.Sprintf(f, v), fmt.Sprintf(f, bound)
		if a != b {
			return a + " ms over " + b + " ms"
		}
	}
	return fmt.Sprintf("%g ms over %g ms", v, bound)
}

// reason joins a cause's explanation with what failed.
func reason(lead string, probs []string) string {
	return lead + strings.Join(probs, "; ")
}
