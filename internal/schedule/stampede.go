package schedule

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Stampede keys: what every burst asks for.
const (
	// FreshKeys makes each burst ask for a key no request asked for before
	// (a cold cache: every request of the burst misses at once).
	FreshKeys = "fresh"
	// ExpiringKeys makes each burst ask for the workload's most asked-for
	// key (as if its cache entry had just expired).
	ExpiringKeys = "expiring"
)

// StampedeSpec describes cache stampedes on top of a stage's arrivals:
// every Every from Start, a burst of Rate × Width extra requests (at least
// one), evenly spread over Width, all for one key (Keys).
type StampedeSpec struct {
	Every, Start, Width time.Duration
	Rate                float64
	Keys                string
}

// Requests is the number of requests of one burst.
func (s StampedeSpec) Requests() int {
	return max(1, int(math.Round(s.Rate*s.Width.Seconds())))
}

// String writes the spec as ParseStampede reads it.
func (s StampedeSpec) String() string {
	return fmt.Sprintf("every=%v,start=%v,width=%v,rate=%g,keys=%s", s.Every, s.Start, s.Width, s.Rate, s.Keys)
}

// ParseStampede reads a stampede spec as --stampede takes it:
// every=30s,width=200ms,rate=500[,start=10s][,keys=fresh|expiring]. start
// defaults to every, keys to fresh; the bursts must not overlap (width <
// every).
func ParseStampede(v string) (StampedeSpec, error) {
	s := StampedeSpec{Keys: FreshKeys, Start: -1}
	bad := func(format string, a ...any) (StampedeSpec, error) {
		return StampedeSpec{}, fmt.Errorf("stampede %q: "+format+" (want every=30s,width=200ms,rate=500[,start=10s][,keys=fresh|expiring])", append([]any{v}, a...)...)
	}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return bad("%q is not key=value", kv)
		}
		val = strings.TrimSpace(val)
		var err error
		switch k {
		case "every":
			s.Every, err = time.ParseDuration(val)
		case "start":
			s.Start, err = time.ParseDuration(val)
		case "width":
			s.Width, err = time.ParseDuration(val)
		case "rate":
			s.Rate, err = strconv.ParseFloat(val, 64)
		case "keys":
			if val != FreshKeys && val != ExpiringKeys {
				return bad("keys %q: use fresh or expiring", val)
			}
			s.Keys = val
		default:
			return bad("unknown key %q", k)
		}
		if err != nil {
			return bad("%s: %v", k, err)
		}
	}
	if s.Start < 0 {
		s.Start = s.Every
	}
	switch {
	case s.Every <= 0:
		return bad("every must be a positive duration")
	case s.Width <= 0 || s.Width >= s.Every:
		return bad("width must be positive and shorter than every")
	case !(s.Rate > 0) || math.IsInf(s.Rate, 0):
		return bad("rate must be a positive number of requests per second")
	case s.Rate*s.Width.Seconds() > 1e6:
		return bad("a burst of more than a million requests")
	}
	return s, nil
}

// Stampede is a Pacer that adds the bursts of Spec to the arrivals of
// Base, in time order, and tells which requests are a burst's (Burst). It
// walks the merged schedule once in order, as the engine asks for it; a
// request before the last one asked restarts the walk from the start, so
// the offset of request n still depends on n only. Safe for concurrent
// use.
type Stampede struct {
	Base Pacer
	Spec StampedeSpec

	mu  sync.Mutex
	cur stampedeCursor
}

var _ Pacer = (*Stampede)(nil)

// stampedeCursor is where the walk is: request n at off, a burst's (burst
// ≥ 0) or the base's (burst −1); the next base request and burst request.
type stampedeCursor struct {
	valid    bool
	n        uint64
	off      time.Duration
	burst    int
	base     uint64        // next base request
	baseOff  time.Duration // its offset
	basePrev time.Duration // offset of base request base−1
	extra    uint64        // next burst request, counted over all bursts
}

// Pace implements Pacer.
func (s *Stampede) Pace(n uint64, _ time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.walk(n)
	return s.cur.off
}

// Burst reports whether request n is one of a burst's, and which burst
// (from 0).
func (s *Stampede) Burst(n uint64) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.walk(n)
	return s.cur.burst, s.cur.burst >= 0
}

// extraOffset is the offset of burst request g (over all bursts).
func (s *Stampede) extraOffset(g uint64) time.Duration {
	m := uint64(s.Spec.Requests())
	j, k := g/m, g%m
	return s.Spec.Start + time.Duration(j)*s.Spec.Every + time.Duration(k)*s.Spec.Width/time.Duration(m)
}

// walk moves the cursor to request n.
func (s *Stampede) walk(n uint64) {
	c := &s.cur
	if c.valid && c.n == n {
		return
	}
	if !c.valid || n < c.n {
		*c = stampedeCursor{valid: true, burst: -1}
		c.baseOff = s.Base.Pace(0, 0)
		s.step() // request 0
		c.n = 0
	}
	for c.n < n {
		s.step()
		c.n++
	}
}

// step takes the next request of the merged schedule: a base one, or a
// burst's when it is due first.
func (s *Stampede) step() {
	c := &s.cur
	if e := s.extraOffset(c.extra); e < c.baseOff {
		c.off, c.burst = e, int(c.extra/uint64(s.Spec.Requests()))
		c.extra++
		return
	}
	c.off, c.burst = c.baseOff, -1
	c.basePrev = c.baseOff
	c.base++
	c.baseOff = max(s.Base.Pace(c.base, c.basePrev), c.basePrev)
}
