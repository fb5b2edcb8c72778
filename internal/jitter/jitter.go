// Package jitter measures how late this machine wakes a sleeping goroutine,
// while a test runs, so that a timing test widens its tolerance by what the
// machine did at that moment instead of asserting an absolute time that a
// busy machine breaks.
//
// A timing test runs its measurement in rounds (BestOf) and starts a Probe beside the load it measures, stops it when
// the load is done, and allows the measured figure to be late by its own
// bound plus a multiple of the probe's median lateness:
//
//	p := jitter.Start(time.Millisecond)
//	... run the streams, take the median TTFT ...
//	late := p.Stop()
//	if d := mt - ttft; d > late.Widen(15*time.Millisecond, 4) { t.Errorf(...) }
//
// On a quiet machine the median lateness is tens of microseconds and the
// bound is the test's own; on a machine with eight busy agents on two cores
// it is milliseconds, and the bound grows with it. A fault the test guards
// (a clock that adds a token's worth of delay, a TTFT counted twice) still
// shows: it is late by far more than the machine's own scheduling.
package jitter

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Probe samples the lateness of a goroutine that sleeps for a fixed period
// again and again, from Start until Stop.
type Probe struct {
	period time.Duration
	stop   chan struct{}
	done   chan struct{}
	lates  []time.Duration // written by the probe's goroutine until done
}

// Start starts a probe that sleeps period at a time (1 ms is a good choice:
// a thousand wake-ups a second cost nothing beside a test's load).
func Start(period time.Duration) *Probe {
	if period <= 0 {
		period = time.Millisecond
	}
	p := &Probe{period: period, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *Probe) run() {
	defer close(p.done)
	t := time.NewTimer(p.period)
	defer t.Stop()
	for {
		start := time.Now()
		t.Reset(p.period)
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.lates = append(p.lates, max(time.Since(start)-p.period, 0))
		}
	}
}

// Stop ends the probe and returns what it measured. Stop must be called
// once; the probe's goroutine has ended when it returns.
func (p *Probe) Stop() Lateness {
	close(p.stop)
	<-p.done
	return summarize(p.lates)
}

// Measure runs a probe for d and returns what it measured: a calibration
// taken just before or after the measured load, for a test whose load cannot
// share the time with a probe.
func Measure(d time.Duration) Lateness {
	p := Start(time.Millisecond)
	time.Sleep(d)
	return p.Stop()
}

// Lateness is how late the probe woke: the median, the 90th percentile and
// the worst of N wake-ups.
type Lateness struct {
	N                int
	Median, P90, Max time.Duration
}

func summarize(lates []time.Duration) Lateness {
	if len(lates) == 0 {
		return Lateness{}
	}
	s := slices.Clone(lates)
	slices.Sort(s)
	return Lateness{N: len(s), Median: s[len(s)/2], P90: s[len(s)*9/10], Max: s[len(s)-1]}
}

// Widen returns bound plus k times the median lateness: the tolerance of a
// median taken while the probe ran, when each measured figure passes
// through about k wake-ups (a server's timer, its write, the client's read).
func (l Lateness) Widen(bound time.Duration, k float64) time.Duration {
	return bound + time.Duration(k*float64(l.Median))
}

// String formats the lateness for a test's log.
func (l Lateness) String() string {
	return fmt.Sprintf("timer lateness median %v, p90 %v, max %v over %d wake-ups", l.Median, l.P90, l.Max, l.N)
}

// Rounds is how many rounds BestOf runs at most.
const Rounds = 5

// BestOf runs round until it returns no timing problems, at most Rounds
// times, and fails the test with every round's problems when no round was
// clean. A scheduling stall of a busy machine (tens, at times hundreds of ms
// while other processes run) delays every stream of the round it falls in,
// since they run at once, but it does not fall in every round; a wrong
// clock or a wrong rate (a TTFT counted twice, a token's delay added per
// token, tokens sent at once, a fault injected twice as often) is wrong in
// every round, so the test still fails. Checks that are not timing (token
// counts, status codes, the shape of a stream) are not problems for round
// to return: it reports them with t.Errorf or t.Fatalf as they are.
func BestOf(t testing.TB, round func() []string) {
	t.Helper()
	var all []string
	for i := range Rounds {
		problems := round()
		if len(problems) == 0 {
			return
		}
		for _, p := range problems {
			all = append(all, fmt.Sprintf("round %d: %s", i+1, p))
			t.Logf("round %d: %s (judged on the best of %d rounds)", i+1, p, Rounds)
		}
	}
	t.Errorf("no round of %d within the tolerances:\n%s", Rounds, strings.Join(all, "\n"))
}
