package capacity

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/longtest"
	"github.com/spate-dev/spate/result"
)

// queue is a synthetic server for the tests whose pass probability near
// its knee is realistic: Slots requests served at once, each for Service
// (exactly; exponentially distributed around it when Random; lognormally,
// with that mean and coefficient of variation CV, when CV > 0), the rest
// waiting their turn in order of arrival; the trial's requests arrive as
// a Poisson process at its rate for Duration. A trial is simulated
// in-process, without HTTP, and described by the per-second series Assess
// judges. The server completes at most Slots / Service requests a second;
// Unbounded serves every request at once. With an SLO, goodput is the
// fraction of the requests whose E2E (its TTFT too: a plain HTTP server's
// first byte is its last) is within it; without, every request counts.
type queue struct {
	Slots     int
	Service   time.Duration
	Random    bool
	CV        float64
	Unbounded bool
	Duration  time.Duration
	SLO       time.Duration
	rng       *rand.Rand
}

func newQueue(slots int, service, duration time.Duration, seed uint64) *queue {
	return &queue{Slots: slots, Service: service, Duration: duration, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

// criteria are the criteria the queue's trials are judged by: their
// seconds are all whole.
func (q *queue) criteria() Criteria { return Criteria{Duration: q.Duration} }

// simulate draws the arrivals of secs seconds of Poisson load at rate on
// an idle server and when each completes (s from the start).
func (q *queue) simulate(rate float64, secs int) (arrive, done []float64) {
	svc := q.Service.Seconds()
	// The lognormal's parameters for mean svc and coefficient of
	// variation CV: σ² = log(1 + CV²), μ = log(svc) − σ²/2.
	sigma := math.Sqrt(math.Log1p(q.CV * q.CV))
	mu := math.Log(svc) - sigma*sigma/2
	for t := q.rng.ExpFloat64() / rate; t < float64(secs); t += q.rng.ExpFloat64() / rate {
		arrive = append(arrive, t)
	}
	free := make([]float64, max(q.Slots, 1)) // when each slot is next free
	done = make([]float64, len(arrive))
	for i, a := range arrive {
		s := svc
		switch {
		case q.CV > 0:
			s = math.Exp(mu + sigma*q.rng.NormFloat64())
		case q.Random:
			s = svc * q.rng.ExpFloat64()
		}
		if q.Unbounded {
			done[i] = a + s
			continue
		}
		j := 0
		for k := range free {
			if free[k] < free[j] {
				j = k
			}
		}
		done[i] = math.Max(a, free[j]) + s
		free[j] = done[i]
	}
	return arrive, done
}

// good is how many of the requests completed within the queue's SLO (all
// of them without one).
func (q *queue) good(arrive, done []float64) int {
	if q.SLO == 0 {
		return len(arrive)
	}
	k := 0
	for i, a := range arrive {
		if done[i]-a <= q.SLO.Seconds() {
			k++
		}
	}
	return k
}

func (q *queue) trial(_ context.Context, l Load) (*result.Scenario, error) {
	secs := int(q.Duration / time.Second)
	arrive, done := q.simulate(l.Rate, secs)
	n := secs + 1
	if len(done) > 0 {
		n = max(n, int(slices.Max(done))+1)
	}
	var s result.Series
	s.SentPerS, s.CompletedPerS, s.ErrorsPerS, s.InFlight = make([]int, n), make([]int, n), make([]int, n), make([]int, n)
	e2e := make([][]float64, n)
	var all []float64
	for i, a := range arrive {
		s.SentPerS[int(a)]++
		s.CompletedPerS[int(done[i])]++
		ms := 1000 * (done[i] - a)
		e2e[int(done[i])] = append(e2e[int(done[i])], ms)
		all = append(all, ms)
	}
	// The most requests in flight at once in each second, as the
	// recorder keeps it.
	type event struct {
		t float64
		d int
	}
	var evs []event
	for i, a := range arrive {
		evs = append(evs, event{a, 1}, event{done[i], -1})
	}
	slices.SortFunc(evs, func(x, y event) int {
		if x.t != y.t {
			return cmp.Compare(x.t, y.t)
		}
		return x.d - y.d // a completion first at the same instant
	})
	cur, j := 0, 0
	for sec := range n {
		peak := cur
		for ; j < len(evs) && evs[j].t < float64(sec+1); j++ {
			cur += evs[j].d
			peak = max(peak, cur)
		}
		s.InFlight[sec] = peak
	}
	s.E2Ep50ms, s.TTFTp50ms = make([]float64, n), make([]float64, n)
	for i, xs := range e2e {
		if len(xs) > 0 {
			s.E2Ep50ms[i] = median(xs)
			s.TTFTp50ms[i] = s.E2Ep50ms[i] // a plain HTTP server's first byte is its last
		}
	}
	p99 := 0.0
	if len(all) > 0 {
		slices.Sort(all)
		p99 = all[int(0.99*float64(len(all)-1))]
	}
	gp := result.Goodput{Fraction: 1}
	if q.SLO > 0 && len(arrive) > 0 {
		ms := float64(q.SLO) / float64(time.Millisecond)
		gp = result.Goodput{Fraction: float64(q.good(arrive, done)) / float64(len(arrive)), SLOms: map[string]float64{"ttft": ms, "e2e": ms}}
	}
	return &result.Scenario{
		Load:     result.Load{Valid: true, ScheduledRate: l.Rate, AchievedRate: float64(len(arrive)) / float64(secs)},
		Requests: result.Requests{Total: len(arrive), Succeeded: len(arrive)},
		Goodput:  gp,
		Metrics:  map[string]result.Dist{"ttft_ms": {Count: int64(len(all)), P99: p99}, "e2e_ms": {Count: int64(len(all)), P99: p99}},
		Series:   s,
	}, nil
}

// passRate is the fraction of n trials at rate that pass.
func (q *queue) passRate(rate float64, n int) float64 {
	k := 0
	for range n {
		sc, _ := q.trial(context.Background(), Load{Rate: rate})
		if Assess(sc, rate, q.criteria()).Pass {
			k++
		}
	}
	return float64(k) / float64(n)
}

// TestDeliveryNoise: delivery is judged with its sampling noise. A server
// that serves every request at once never underdelivers, in 3 s trials
// at 40 req/s as in 10 s ones (the search failed it as
// "underdelivered 93 %": the seconds' Poisson swings in sends, set against
// the trial's mean send rate, read as a server falling behind); a server
// that completes 20 req/s is surely under 95 % of 26 req/s sent (the
// old rule failed 65 of the 400 trials at 40 req/s).
func TestDeliveryNoise(t *testing.T) {
	for _, c := range []struct {
		name       string
		q          *queue
		rate       float64
		underMost  int // of 400 trials
		underLeast int
	}{
		{"unbounded, 3 s trials at 40 req/s", &queue{Unbounded: true, Service: 50 * time.Millisecond, Duration: 3 * time.Second}, 40, 0, 0},
		{"unbounded, 10 s trials at 40 req/s", &queue{Unbounded: true, Service: 50 * time.Millisecond, Duration: 10 * time.Second}, 40, 0, 0},
		// Ten requests a trial, half a second each: the seconds' edges cut
		// sends in half, the most noise they make. A test at 95 % fails up
		// to 5 % of the trials of a server completing exactly 95 %; one
		// completing all, far fewer (the old rule: 64 of 400).
		{"unbounded, 3 s trials at 5 req/s", &queue{Unbounded: true, Service: 500 * time.Millisecond, Duration: 3 * time.Second}, 5, 4, 0},
		{"20 req/s of service, 10 s trials at 26 req/s", &queue{Slots: 4, Service: 200 * time.Millisecond, Duration: 10 * time.Second}, 26, 400, 390},
	} {
		c.q.rng = rand.New(rand.NewPCG(7, 7))
		under := 0
		for range 400 {
			sc, _ := c.q.trial(context.Background(), Load{Rate: c.rate})
			if a := Assess(sc, c.rate, c.q.criteria()); a.Reason == ReasonUnderdelivery {
				under++
			}
		}
		if under > c.underMost || under < c.underLeast {
			t.Errorf("%s: %d of 400 trials underdelivered, want %d to %d", c.name, under, c.underLeast, c.underMost)
		}
	}
}

// knee is the rate at which the queue's trials pass half the time (the
// capacity a search of such trials can find): bisection between from and
// to on the pass rate of n trials.
func (q *queue) knee(from, to float64, n int) float64 {
	for to-from > 0.02 {
		mid := (from + to) / 2
		if q.passRate(mid, n) >= 0.5 {
			from = mid
		} else {
			to = mid
		}
	}
	return (from + to) / 2
}

// TestIntervalCoverage: over seeded searches of the queue server (4 slots
// of 200 ms: it completes 20 req/s; Poisson arrivals make its trials near
// the knee a coin toss, and a TTFT that grows by chance fails a sixth of
// them even at 18 req/s), the interval holds the rate at which its trials
// pass half the time about as often as its confidence says, it is never
// zero-width, and the capacity reported passed its trials by the
// decision's margin (a rate whose trials fail as often as they pass is
// never the answer). The old interval, a bootstrap over three trials at
// each end of the bracket, was zero-width whenever they agreed.
func TestIntervalCoverage(t *testing.T) {
	for _, c := range []struct {
		name     string
		q        *queue
		searches int
		long     bool // seconds of CPU: with -tags integration only
	}{
		{"fixed 200 ms, 10 s trials", &queue{Slots: 4, Service: 200 * time.Millisecond, Duration: 10 * time.Second}, 200, false},
		{"random 200 ms, 10 s trials", &queue{Slots: 4, Service: 200 * time.Millisecond, Random: true, Duration: 10 * time.Second}, 200, true},
		{"fixed 200 ms, 3 s trials", &queue{Slots: 4, Service: 200 * time.Millisecond, Duration: 3 * time.Second}, 200, true},
	} {
		if c.long && !longtest.On {
			t.Logf("%s: runs with -tags integration", c.name)
			continue
		}
		c.q.rng = rand.New(rand.NewPCG(1, 1))
		knee := c.q.knee(14, 30, 1000)
		covered, inconclusive, trials, wrong, noInterval, width := 0, 0, 0, 0, 0, 0.0
		for seed := range c.searches {
			c.q.rng = rand.New(rand.NewPCG(uint64(seed)+100, 2))
			out, err := Search(context.Background(), c.q.trial, Config{Criteria: c.q.criteria(), MinRate: 5, MaxRate: 64})
			if err != nil {
				t.Fatal(err)
			}
			cp := out.Capacity
			trials += len(cp.Trials)
			if cp.Inconclusive != "" {
				inconclusive++
				continue
			}
			if rt := cp.RateTrials; cp.RateRPS > 0 && 2*rt[0]-rt[1] < decisionMargin {
				t.Errorf("%s, seed %d: capacity %v passed %d of its %d trials", c.name, seed, cp.RateRPS, rt[0], rt[1])
			}
			iv := cp.Interval
			if iv == nil {
				noInterval++
				t.Logf("%s, seed %d: capacity %v [%v, %v) no interval, warnings %q", c.name, seed, cp.RateRPS, cp.LowRPS, cp.HighRPS, cp.Warnings)
				continue
			}
			if iv.HighRPS <= iv.LowRPS {
				t.Fatalf("%s, seed %d: interval %+v, warnings %q", c.name, seed, iv, cp.Warnings)
			}
			width += (iv.HighRPS - iv.LowRPS) / knee
			if iv.LowRPS <= knee && knee <= iv.HighRPS {
				covered++
			}
			if cp.RateRPS > knee {
				wrong++
			}
		}
		decided := c.searches - inconclusive - noInterval
		cov := float64(covered) / float64(decided)
		t.Logf("%s: trials pass half the time at %.2f req/s; %d of %d intervals hold it (%.1f %%), %d inconclusive, %d without an interval, capacity above it in %d, mean width %.1f %%, %.1f trials a search",
			c.name, knee, covered, decided, 100*cov, inconclusive, noInterval, wrong, 100*width/float64(decided), float64(trials)/float64(c.searches))
		// Measured: 99.0, 96.3 and 93.8 %. Over 200 searches a coverage
		// of 95 % falls under 90 % by chance once in a thousand.
		if cov < 0.9 || decided < c.searches*9/10 {
			t.Errorf("%s: coverage %.3f of the %.0f %% interval over %d searches with one", c.name, cov, 100*IntervalConfidence, decided)
		}
	}
}
