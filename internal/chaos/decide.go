package chaos

import "time"

// Kind names one kind of injected fault, as counted in Stats.
type Kind int

// Fault kinds.
const (
	KindError Kind = iota
	KindRateLimit
	KindReset
	KindBlackhole
	KindLatency
	KindSpike
	KindBandwidth
	KindTruncate
	KindStall
	KindDrip
	numKinds
)

var kindNames = [numKinds]string{"error", "rate_limit", "reset", "blackhole", "latency", "spike", "bandwidth", "truncate", "stall", "drip"}

// String returns the kind's name in Stats.Injected.
func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return "unknown"
	}
	return kindNames[k]
}

// Failing reports whether the kind by itself fails the request it hits.
func (k Kind) Failing() bool {
	switch k {
	case KindError, KindRateLimit, KindReset, KindBlackhole, KindTruncate:
		return true
	}
	return false
}

// reject is how a request is answered instead of being forwarded.
type reject uint8

const (
	rejectNone reject = iota
	rejectError
	rejectRateLimit
	rejectReset
	rejectBlackhole
)

// decision is what happens to one request: every active rule's draws,
// combined. The first rule that rejects decides the rejection; delays add
// up; of the stream faults, each kind takes its first rule.
type decision struct {
	reject     reject
	status     int
	retryAfter time.Duration
	latency    time.Duration // from Latency
	spike      time.Duration // from SpikeDelay
	bandwidth  int64
	truncAfter int // events before the cut, -1: none
	stallAfter int // events before the stall, -1: none
	stall      time.Duration
	drip       time.Duration
}

// streamFaults reports whether the response body needs the event-aware
// or throttled copy.
func (d *decision) streamFaults() bool {
	return d.bandwidth > 0 || d.truncAfter >= 0 || d.stallAfter >= 0 || d.drip > 0
}

// decide draws request seq's faults under the rules active at offset t
// since the set was applied. Every rule draws the same number of values
// whatever the outcome, so one rule's settings never shift another's draws.
func decide(rules []Rule, seed int64, seq uint64, t time.Duration) decision {
	d := decision{truncAfter: -1, stallAfter: -1}
	for i := range rules {
		r := &rules[i]
		if !r.active(t) {
			continue
		}
		dr := newDraws(seed, i, seq)
		u := [7]float64{}
		for j := range u {
			u[j] = dr.u()
		}
		if d.reject == rejectNone {
			switch x := u[0]; {
			case x < r.ErrorRate:
				d.reject, d.status = rejectError, r.ErrorStatus
				d.retryAfter = time.Duration(r.RetryAfter)
			case x < r.ErrorRate+r.RateLimitRate:
				d.reject, d.retryAfter = rejectRateLimit, time.Duration(r.RetryAfter)
			case x < r.ErrorRate+r.RateLimitRate+r.ResetRate:
				d.reject = rejectReset
			case x < r.ErrorRate+r.RateLimitRate+r.ResetRate+r.BlackholeRate:
				d.reject = rejectBlackhole
			}
		}
		if u[1] < r.SpikeRate {
			d.spike += time.Duration(r.SpikeDelay)
		}
		if u[2] < r.LatencyRate {
			d.latency += r.Latency.draw(&dr)
		}
		if r.Bandwidth > 0 && u[3] < r.BandwidthRate && (d.bandwidth == 0 || r.Bandwidth < d.bandwidth) {
			d.bandwidth = r.Bandwidth
		}
		if d.truncAfter < 0 && u[4] < r.TruncateRate {
			d.truncAfter = r.TruncateAfter
		}
		if d.stallAfter < 0 && u[5] < r.StallRate && r.StallDuration > 0 {
			d.stallAfter, d.stall = r.StallAfter, time.Duration(r.StallDuration)
		}
		if d.drip == 0 && u[6] < r.DripRate {
			d.drip = time.Duration(r.DripDelay)
		}
	}
	return d
}
