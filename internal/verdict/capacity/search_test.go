package capacity

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/result"
)

// server is a fake with a known capacity: goodput is 1 up to Knee req/s
// and falls beyond; it completes at most MaxRate requests a second (the
// rest queue: in flight grows); past GrowAbove its TTFT grows through the
// trial. Trials are 10 s of load and a partial second.
type server struct {
	Knee, MaxRate, GrowAbove float64
	Closed                   float64 // closed-loop throughput
	calls                    int
}

func (s *server) trial(_ context.Context, l Load) (*result.Scenario, error) {
	s.calls++
	sc := &result.Scenario{Load: result.Load{Valid: true}, Requests: result.Requests{Total: 100, Succeeded: 100}}
	if l.Concurrency > 0 {
		sc.Throughput.RequestsPerS = s.Closed
		sc.Goodput.Fraction = 1
		return sc, nil
	}
	sc.Load.AchievedRate = l.Rate
	served := l.Rate
	if s.MaxRate > 0 {
		served = math.Min(l.Rate, s.MaxRate)
	}
	sc.Goodput.Fraction = 1
	sc.Metrics = map[string]result.Dist{"ttft_ms": {Count: 100, P99: 100 + 10*l.Rate}}
	if l.Rate > s.Knee {
		sc.Goodput.Fraction = math.Max(0, 1-(l.Rate-s.Knee)/s.Knee*5)
	}
	ttft := func(i int) float64 {
		if s.GrowAbove > 0 && l.Rate > s.GrowAbove {
			return 100 + 30*float64(i)
		}
		return 100
	}
	sc.Series = series(11, l.Rate, served, ttft)
	return sc, nil
}

// series is the per-second series of a trial of secs whole seconds (and a
// partial one) at rate, served at up to served a second, requests taking
// 100 ms (E2E p50); the rest queue.
func series(secs int, rate, served float64, ttft func(int) float64) result.Series {
	var s result.Series
	count := func(r float64, i int) int {
		return int(math.Floor(r*float64(i+1)+1e-9) - math.Floor(r*float64(i)+1e-9))
	}
	for i := range secs {
		s.SentPerS = append(s.SentPerS, count(rate, i))
		s.CompletedPerS = append(s.CompletedPerS, count(served, i))
		s.ErrorsPerS = append(s.ErrorsPerS, 0)
		s.InFlight = append(s.InFlight, 2+int((rate-served)*float64(i)))
		s.TTFTp50ms = append(s.TTFTp50ms, ttft(i))
		s.E2Ep50ms = append(s.E2Ep50ms, 100)
	}
	s.SentPerS = append(s.SentPerS, 1)
	return s
}

func TestSearchBisects(t *testing.T) {
	s := &server{Knee: 7.3}
	out, err := Search(context.Background(), s.trial, Config{MinRate: 1, MaxRate: 100, Resolution: 0.05, Confirm: -1})
	if err != nil {
		t.Fatal(err)
	}
	c := out.Capacity
	// 1, 2, 4 pass, 8 fails; then 6 ✓, 7 ✓, 7.5 ✗, 7.25 ✓: (7.5−7.25)/7.5 = 3.3 %.
	if c.LowRPS != 7.25 || c.HighRPS != 7.5 || c.RateRPS != 7.25 || len(c.Trials) != 8 || len(out.Scenarios) != 8 {
		t.Errorf("capacity [%v, %v] after %d trials, want [7.25, 7.5] after 8", c.LowRPS, c.HighRPS, len(c.Trials))
	}
	if math.Abs(c.Resolution-0.25/7.5) > 1e-12 || c.Saturated || c.GoodputMin != 1 || c.Interval != nil {
		t.Errorf("resolution %v saturated %v goodput %v interval %v", c.Resolution, c.Saturated, c.GoodputMin, c.Interval)
	}
	if c.Trials[3].Reason != ReasonGoodput || c.Trials[3].RateRPS != 8 || out.Scenarios[3].Name != "trial-04-8rps" {
		t.Errorf("trial 4: %+v %s", c.Trials[3], out.Scenarios[3].Name)
	}
}

func TestSearchStopsAtSaturation(t *testing.T) {
	for _, c := range []struct {
		name   string
		srv    server
		reason string
		hi     float64
	}{
		{"underdelivered", server{Knee: 1000, MaxRate: 10}, "underdelivered at 16rps", 16},
		{"ttft grows", server{Knee: 1000, GrowAbove: 5}, "ttft_growing at 8rps", 8},
	} {
		out, err := Search(context.Background(), c.srv.trial, Config{MinRate: 1, MaxRate: 1000, Resolution: 0.1})
		if err != nil {
			t.Fatal(err)
		}
		cp := out.Capacity
		if !cp.Saturated || cp.SaturationReason != c.reason {
			t.Errorf("%s: saturated %v %q, want %q", c.name, cp.Saturated, cp.SaturationReason, c.reason)
		}
		for _, tr := range cp.Trials {
			if tr.RateRPS > c.hi {
				t.Errorf("%s: tried %v above the first failing rate %v", c.name, tr.RateRPS, c.hi)
			}
		}
		if cp.HighRPS > c.hi || cp.Resolution > 0.1 {
			t.Errorf("%s: [%v, %v]", c.name, cp.LowRPS, cp.HighRPS)
		}
	}
	// A server that completes 10 req/s: the capacity is ≤ 10/0.95, one
	// request for the seconds' edges and the sampling noise of the 110
	// requests its steady seconds hold: 100 completed of 110 sent (91 %)
	// is within it (1.3 standard deviations under 95 %), of 115 (87 %) it
	// is not.
	out, _ := Search(context.Background(), (&server{Knee: 1000, MaxRate: 10}).trial, Config{MinRate: 1, MaxRate: 1000, Resolution: 0.02, Confirm: -1})
	if c := out.Capacity; c.RateRPS < 10 || c.RateRPS > 11.5 {
		t.Errorf("capacity %v, want within [10, 11.5]", c.RateRPS)
	}
}

func TestSearchEdges(t *testing.T) {
	// The ends are decided: three trials agreeing.
	out, _ := Search(context.Background(), (&server{Knee: 0.5}).trial, Config{MinRate: 1, MaxRate: 10})
	if c := out.Capacity; c.RateRPS != 0 || c.HighRPS != 1 || len(c.Trials) != 3 || !strings.Contains(c.Warnings[0], "--min-rate") {
		t.Errorf("min rate fails: %+v", c)
	}
	out, _ = Search(context.Background(), (&server{Knee: 100}).trial, Config{MinRate: 1, MaxRate: 10})
	if c := out.Capacity; c.RateRPS != 10 || c.HighRPS != 0 || len(c.Trials) != 7 || !strings.Contains(c.Warnings[0], "--max-rate") {
		t.Errorf("max rate passes: rate %v high %v trials %d %v", c.RateRPS, c.HighRPS, len(c.Trials), c.Warnings)
	}
	// Stopped by --max-trials before any rate was decided: no capacity it
	// can vouch for (it reported 6 req/s, passed once, with a warning).
	out, err := Search(context.Background(), (&server{Knee: 7.3}).trial, Config{MinRate: 1, MaxRate: 100, Resolution: 0.001, MaxTrials: 6})
	if c := out.Capacity; err != nil || len(c.Trials) != 6 || !strings.Contains(c.Inconclusive, "stopped after 6 trials") || !strings.Contains(c.Inconclusive, "before any rate was decided") {
		t.Errorf("max trials: %v %d %q", err, len(c.Trials), c.Inconclusive)
	}
	boom := errors.New("boom")
	n := 0
	out, err = Search(context.Background(), func(ctx context.Context, l Load) (*result.Scenario, error) {
		if n++; n == 3 {
			return nil, boom
		}
		return (&server{Knee: 100}).trial(ctx, l)
	}, Config{})
	if !errors.Is(err, boom) || len(out.Capacity.Trials) != 2 || out.Capacity.RateRPS != 2 {
		t.Errorf("trial error: %v, %d trials, rate %v", err, len(out.Capacity.Trials), out.Capacity.RateRPS)
	}
}

// TestInvalidRetried: a trial whose measurement is invalid is run again
// at the same rate, not taken as a failure; a rate that stays invalid ends
// the search inconclusive, saying what is known.
func TestInvalidRetried(t *testing.T) {
	n := 0
	once := func(ctx context.Context, l Load) (*result.Scenario, error) {
		sc, err := (&server{Knee: 7.3}).trial(ctx, l)
		if n++; n == 4 { // the first trial at 8 req/s
			sc.Load.Valid = false
		}
		return sc, err
	}
	out, err := Search(context.Background(), once, Config{MinRate: 1, MaxRate: 100, Resolution: 0.05, Confirm: -1})
	c := out.Capacity
	if err != nil || c.RateRPS != 7.25 || len(c.Trials) != 9 || !c.Trials[4].Retry || c.Trials[3].Reason != ReasonInvalid || c.Inconclusive != "" || c.Saturated {
		t.Errorf("a noisy invalid trial: %v, capacity %v after %d trials, inconclusive %q, saturated %v", err, c.RateRPS, len(c.Trials), c.Inconclusive, c.Saturated)
	}
	always := func(ctx context.Context, l Load) (*result.Scenario, error) {
		sc, err := (&server{Knee: 100}).trial(ctx, l)
		sc.Load.Valid = l.Rate < 8
		return sc, err
	}
	out, err = Search(context.Background(), always, Config{MinRate: 1, MaxRate: 100})
	c = out.Capacity
	if err != nil || !strings.Contains(c.Inconclusive, "could not keep the schedule of 8rps") || !strings.Contains(c.Inconclusive, "at least 4 req/s") {
		t.Errorf("always invalid at 8: %v, %q", err, c.Inconclusive)
	}
}

// TestImpreciseGoodputRetried: a trial whose goodput target lies inside
// its goodput's measurement error (responses read late) is neither a pass
// nor a failure of the server: it is run again, as an invalid one is, and
// one whose whole range is on one side of the target is judged on it.
func TestImpreciseGoodputRetried(t *testing.T) {
	n := 0
	once := func(ctx context.Context, l Load) (*result.Scenario, error) {
		sc, err := (&server{Knee: 7.3}).trial(ctx, l)
		switch n++; n {
		case 4: // the first trial at 8 req/s: goodput 0.5 measured, the target inside
			sc.MeasurementError = &result.MeasurementError{Goodput: result.Range{Low: sc.Goodput.Fraction, High: 1}}
		case 2: // at 2 req/s: a range wholly over the target decides nothing new
			sc.MeasurementError = &result.MeasurementError{Goodput: result.Range{Low: 0.97, High: 1}}
		}
		return sc, err
	}
	out, err := Search(context.Background(), once, Config{MinRate: 1, MaxRate: 100, Resolution: 0.05, Confirm: -1})
	c := out.Capacity
	if err != nil || c.RateRPS != 7.25 || !c.Trials[1].Pass || c.Trials[3].Reason != ReasonImprecise || c.Trials[3].Pass || !c.Trials[4].Retry || c.Inconclusive != "" {
		t.Errorf("an imprecise trial: %v, capacity %v, trials %+v, inconclusive %q", err, c.RateRPS, c.Trials, c.Inconclusive)
	}
	always := func(ctx context.Context, l Load) (*result.Scenario, error) {
		sc, err := (&server{Knee: 100}).trial(ctx, l)
		if l.Rate >= 8 {
			sc.MeasurementError = &result.MeasurementError{Goodput: result.Range{Low: 0.5, High: 1}}
		}
		return sc, err
	}
	out, err = Search(context.Background(), always, Config{MinRate: 1, MaxRate: 100})
	c = out.Capacity
	if err != nil || !strings.Contains(c.Inconclusive, "too late to tell its goodput from the target") || !strings.Contains(c.Inconclusive, "at least 4 req/s") {
		t.Errorf("always imprecise at 8: %v, %q", err, c.Inconclusive)
	}
}

// TestTooShortCannotTell: trials with too few steady seconds cannot tell,
// and the search says so instead of passing them.
func TestTooShortCannotTell(t *testing.T) {
	short := func(_ context.Context, l Load) (*result.Scenario, error) {
		sc := &result.Scenario{Load: result.Load{Valid: true}, Requests: result.Requests{Total: 9, Succeeded: 9}, Goodput: result.Goodput{Fraction: 1}}
		sc.Series = series(2, l.Rate, l.Rate, func(int) float64 { return 100 })
		for i := range sc.Series.E2Ep50ms {
			sc.Series.E2Ep50ms[i] = 1500 // requests of 1.5 s in a trial of 2.x s
		}
		return sc, nil
	}
	out, err := Search(context.Background(), short, Config{MinRate: 1, MaxRate: 100})
	c := out.Capacity
	if err != nil || len(c.Trials) != 1 || c.Trials[0].Reason != ReasonTooShort || c.Trials[0].Pass || !strings.Contains(c.Inconclusive, "cannot tell") || !strings.Contains(c.Inconclusive, "--trial-duration") {
		t.Errorf("short trials: %v, trials %+v, inconclusive %q", err, c.Trials, c.Inconclusive)
	}
}

// TestRepeatsMajority: each rate is tried three times and passes on a
// majority; the goodput spread at the capacity is reported.
func TestRepeatsMajority(t *testing.T) {
	n := 0
	trial := func(_ context.Context, l Load) (*result.Scenario, error) {
		n++
		sc := &result.Scenario{Load: result.Load{Valid: true, AchievedRate: l.Rate}, Requests: result.Requests{Succeeded: 1},
			Series: series(11, l.Rate, l.Rate, func(int) float64 { return 100 })}
		// Below 5 req/s two of three trials pass (goodput 0.97, 0.9,
		// 0.99); from 5 on, one of three.
		g := []float64{0.97, 0.9, 0.99}[n%3]
		if l.Rate >= 5 {
			g = []float64{0.97, 0.9, 0.5}[n%3]
		}
		sc.Goodput.Fraction = g
		return sc, nil
	}
	out, err := Search(context.Background(), trial, Config{MinRate: 1, MaxRate: 100, Resolution: 0.2, Repeats: 3, Confirm: -1})
	if err != nil {
		t.Fatal(err)
	}
	c := out.Capacity
	// 1, 2, 4 pass, 8 fails, 6 fails, 5 fails: (5−4)/5 = 0.2.
	if c.RateRPS != 4 || c.HighRPS != 5 || len(c.Trials) != 18 || c.GoodputMin != 0.9 || c.GoodputMax != 0.99 {
		t.Errorf("capacity [%v, %v], %d trials, goodput %v..%v", c.RateRPS, c.HighRPS, len(c.Trials), c.GoodputMin, c.GoodputMax)
	}
}

func TestSweep(t *testing.T) {
	s := &server{Knee: 15, Closed: 20}
	out, err := Sweep(context.Background(), s.trial, SweepConfig{Concurrency: 8, Confirm: -1})
	if err != nil {
		t.Fatal(err)
	}
	c := out.Capacity
	// Steps of 20: 4, 8, 12, 14, 16 (fails: goodput), 18, 20.
	if c.ClosedLoopMaxRPS != 20 || c.Concurrency != 8 || math.Abs(c.RateRPS-14) > 1e-9 || math.Abs(c.HighRPS-16) > 1e-9 || len(c.Trials) != 8 {
		t.Errorf("sweep: max %v, capacity [%v, %v], %d trials", c.ClosedLoopMaxRPS, c.RateRPS, c.HighRPS, len(c.Trials))
	}
	// Steps given out of order are swept lowest first: with 1.0 first the
	// sweep stopped there and said "the lowest step already failed".
	out, err = Sweep(context.Background(), (&server{Knee: 15, Closed: 20}).trial, SweepConfig{Concurrency: 8, Confirm: -1, Steps: []float64{1.0, 0.2}})
	if c := out.Capacity; err != nil || c.RateRPS != 4 || c.HighRPS != 20 {
		t.Errorf("steps 1.0,0.2: %v, capacity [%v, %v)", err, c.RateRPS, c.HighRPS)
	}
	// The top is the steady rate of the closed-loop trial's seconds of
	// load (6/s), not its whole-stage rate, which counts the drain.
	steady := func(ctx context.Context, l Load) (*result.Scenario, error) {
		if l.Concurrency > 0 {
			sc := &result.Scenario{Throughput: result.Throughput{RequestsPerS: 4}}
			sc.Series = grow(100, 100, 100, 100, 100)
			for i := range sc.Series.CompletedPerS {
				sc.Series.CompletedPerS[i] = 6
			}
			sc.Series.CompletedPerS[0] = 1
			sc.Series.ErrorsPerS = make([]int, 5)
			return sc, nil
		}
		return (&server{Knee: 100}).trial(ctx, l)
	}
	out, err = Sweep(context.Background(), steady, SweepConfig{Steps: []float64{0.5, 1}})
	if err != nil || out.Capacity.ClosedLoopMaxRPS != 6 || out.Capacity.RateRPS != 6 || out.Capacity.Trials[0].Reason != ReasonClosedLoop {
		t.Errorf("steady top: %v %+v", err, out.Capacity)
	}
	// With E2E figures, Little's law: 8 in flight at 400 ms is 20 req/s.
	little := func(ctx context.Context, l Load) (*result.Scenario, error) {
		if l.Concurrency > 0 {
			return &result.Scenario{Metrics: map[string]result.Dist{"e2e_ms": {Count: 10, Mean: 400}}}, nil
		}
		return (&server{Knee: 100}).trial(ctx, l)
	}
	out, err = Sweep(context.Background(), little, SweepConfig{Concurrency: 8, Steps: []float64{1}})
	if err != nil || out.Capacity.ClosedLoopMaxRPS != 20 || out.Capacity.Trials[1].RateRPS != 20 {
		t.Errorf("little's law top: %v %+v", err, out.Capacity)
	}
	// A saturation stops the sweep.
	s = &server{Knee: 1000, MaxRate: 11, Closed: 20}
	out, _ = Sweep(context.Background(), s.trial, SweepConfig{Confirm: -1})
	// 12 req/s delivers 11 (110 of 120, within the noise of 95 %) and
	// passes; 14 delivers 11 (79 %): saturated.
	if c := out.Capacity; !c.Saturated || len(c.Trials) != 5 || math.Abs(c.RateRPS-12) > 1e-9 || math.Abs(c.HighRPS-14) > 1e-9 {
		t.Errorf("saturated sweep: %+v", c)
	}
	// A sweep whose lowest step fails names a sweep's flag, not the
	// adaptive search's.
	out, _ = Sweep(context.Background(), (&server{Knee: 1, Closed: 20}).trial, SweepConfig{Confirm: -1})
	if w := strings.Join(out.Capacity.Warnings, ";"); !strings.Contains(w, "--sweep-steps") || strings.Contains(w, "--min-rate") {
		t.Errorf("sweep warnings %q", w)
	}
}

func TestJudge(t *testing.T) {
	ok := result.Scenario{Load: result.Load{Valid: true, AchievedRate: 10}, Requests: result.Requests{Succeeded: 5}, Goodput: result.Goodput{Fraction: 0.96},
		Series: series(6, 10, 10, func(int) float64 { return 100 })}
	for _, c := range []struct {
		name   string
		edit   func(*result.Scenario)
		rate   float64
		reason string
	}{
		{"pass", func(*result.Scenario) {}, 10, ""},
		{"goodput", func(s *result.Scenario) { s.Goodput.Fraction = 0.94 }, 10, ReasonGoodput},
		{"invalid", func(s *result.Scenario) { s.Load.Valid = false }, 10, ReasonInvalid},
		{"errors", func(s *result.Scenario) { s.Requests.Succeeded = 0 }, 10, ReasonErrors},
		// The case: 32 req/s sent, 7.25 completed.
		{"completions do not keep up", func(s *result.Scenario) { s.Series = series(6, 32, 7.25, func(int) float64 { return 100 }) }, 32, ReasonUnderdelivery},
		{"the sends are what counts, not the rate asked", func(s *result.Scenario) { s.Series = series(6, 9.5, 9.5, func(int) float64 { return 100 }) }, 12, ""},
		{"failures are not delivered", func(s *result.Scenario) {
			for i := range s.Series.ErrorsPerS {
				s.Series.ErrorsPerS[i] = 2
			}
		}, 10, ReasonUnderdelivery},
		{"queue growing", func(s *result.Scenario) {
			for i := range s.Series.InFlight {
				s.Series.InFlight[i] = 2 + 3*i // 15 more in flight over 5 s of 50 sent
			}
		}, 10, ReasonQueueGrowing},
		{"closed loop has no rate to deliver", func(*result.Scenario) {}, 0, ""},
		{"too short to tell", func(s *result.Scenario) { s.Series = series(1, 10, 10, func(int) float64 { return 100 }) }, 10, ReasonTooShort},
		// TTFT p50 100 → 400 ms over 4 s (slope 100 ms/s × 4 s = 400 ms,
		// 1.6× the median 250): a queue.
		{"ttft growing", func(s *result.Scenario) { s.Series = grow(100, 200, 300, 400) }, 0, ReasonTTFTGrowing},
		// The same growth is within jitter of a 2 s SLO (needs > 1 s).
		{"ttft growth under half the SLO", func(s *result.Scenario) {
			s.Series = grow(100, 200, 300, 400)
			s.Goodput.SLOms = map[string]float64{"ttft": 2000}
		}, 0, ""},
		{"steady ttft", func(s *result.Scenario) { s.Series = grow(100, 130, 90, 110) }, 0, ""},
	} {
		sc := ok
		sc.Series = series(6, 10, 10, func(int) float64 { return 100 })
		c.edit(&sc)
		pass, reason := Judge(&sc, c.rate, Criteria{})
		if pass != (c.reason == "") || reason != c.reason {
			a := Assess(&sc, c.rate, Criteria{})
			t.Errorf("%s: %v %q, want %q (%+v)", c.name, pass, reason, c.reason, a)
		}
	}
	// With the trials' duration known, the last second of sending is
	// whole and counts.
	sc := ok
	sc.Series = series(6, 10, 10, func(int) float64 { return 100 })
	sc.Series.SentPerS = sc.Series.SentPerS[:6]
	if a := Assess(&sc, 10, Criteria{}); a.SteadyS != 4 || !a.Pass {
		t.Errorf("6 s of sending, the last taken as partial: %+v", a)
	}
	if a := Assess(&sc, 10, Criteria{Warmup: time.Second, Duration: 5 * time.Second}); a.SteadyS != 5 || !a.Pass {
		t.Errorf("6 s of sending, all whole: %+v", a)
	}
}

// grow is a series with the given per-second TTFT p50 and one more
// (partial) second of sends.
func grow(ttft ...float64) result.Series {
	var s result.Series
	for _, v := range ttft {
		s.SentPerS = append(s.SentPerS, 5)
		s.CompletedPerS = append(s.CompletedPerS, 5)
		s.TTFTp50ms = append(s.TTFTp50ms, v)
	}
	s.SentPerS = append(s.SentPerS, 1)
	return s
}

// TestJudgeBatchingServer: a batching server's E2E lengthens with its load
// long before it stops keeping up. At 5 req/s with E2E 2 s (0.6 s on an
// unloaded server) it completes its 5 a second once the pipeline is full:
// the trial is judged from its own lag, and passes (judged from the
// unloaded service time, it "delivered" 86 % and failed). A trial in which
// nothing completed while the load ran fails against a known service
// time, and cannot tell without one.
func TestJudgeBatchingServer(t *testing.T) {
	var s result.Series
	for i := range 8 {
		done, e2e := 5, 2000.0
		if i < 2 {
			done, e2e = 0, 0
		}
		s.SentPerS = append(s.SentPerS, 5)
		s.CompletedPerS = append(s.CompletedPerS, done)
		s.ErrorsPerS = append(s.ErrorsPerS, 0)
		s.InFlight = append(s.InFlight, 10)
		s.TTFTp50ms = append(s.TTFTp50ms, 300)
		s.E2Ep50ms = append(s.E2Ep50ms, e2e)
	}
	sc := result.Scenario{Load: result.Load{Valid: true, ScheduledRate: 5}, Requests: result.Requests{Succeeded: 30},
		Goodput: result.Goodput{Fraction: 1}, Series: s}
	c := Criteria{Duration: 8 * time.Second, ServiceTime: 600 * time.Millisecond}
	if a := Assess(&sc, 5, c); !a.Pass || a.SteadyS != 6 || math.Abs(a.CompletedRPS-5) > 1e-9 {
		t.Errorf("batching server keeping up at 5 req/s: %+v", a)
	}
	// Nothing completed in the 8 s of load.
	none := sc
	none.Series.CompletedPerS = make([]int, 8)
	none.Series.E2Ep50ms = make([]float64, 8)
	if a := Assess(&none, 5, c); a.Pass || a.Reason != ReasonUnderdelivery {
		t.Errorf("nothing completed, service time 600 ms: %+v", a)
	}
	c.ServiceTime = 0
	if a := Assess(&none, 5, c); !a.CannotTell || a.Reason != ReasonTooShort {
		t.Errorf("nothing completed, service time unknown: %+v", a)
	}
}

// TestMaxTrialsBeforeAnything: a search stopped by --max-trials before any
// rate passed or failed (its one trial invalid) knows nothing of the
// capacity: inconclusive (exit 4), not "none found" with exit 0. Stopped
// with a bracket, it reports it with a warning.
func TestMaxTrialsBeforeAnything(t *testing.T) {
	invalid := func(ctx context.Context, l Load) (*result.Scenario, error) {
		sc, err := (&server{Knee: 100}).trial(ctx, l)
		sc.Load.Valid = false
		return sc, err
	}
	out, err := Search(context.Background(), invalid, Config{MinRate: 1, MaxRate: 8, MaxTrials: 1, Confirm: -1})
	if c := out.Capacity; err != nil || !strings.Contains(c.Inconclusive, "before any rate passed or failed") {
		t.Errorf("one invalid trial, --max-trials 1: %v, inconclusive %q, warnings %q", err, c.Inconclusive, c.Warnings)
	}
	out, err = Search(context.Background(), (&server{Knee: 7.3}).trial, Config{MinRate: 1, MaxRate: 100, Resolution: 0.01, MaxTrials: 6, Confirm: -1})
	if c := out.Capacity; err != nil || c.Inconclusive != "" || c.RateRPS == 0 || c.HighRPS == 0 || !strings.Contains(strings.Join(c.Warnings, "\n"), "--max-trials") {
		t.Errorf("stopped with a bracket: %v, capacity %v [%v, %v), inconclusive %q, warnings %q", err, c.RateRPS, c.LowRPS, c.HighRPS, c.Inconclusive, c.Warnings)
	}
}

// TestConfirmContradicts: the search passes 5 req/s once (a lucky trial);
// the trials deciding it fail. A rate whose trials fail more often than
// they pass is never the answer (the search reported "capacity: 5 req/s",
// exit 0): the bracket moves down to 4 req/s, decided to pass.
func TestConfirmContradicts(t *testing.T) {
	calls := map[float64]int{}
	trial := func(ctx context.Context, l Load) (*result.Scenario, error) {
		sc, err := (&server{Knee: 100}).trial(ctx, l)
		calls[l.Rate]++
		if l.Rate > 5 || (l.Rate == 5 && calls[5] > 1) {
			sc.Goodput.Fraction = 0.5
		}
		return sc, err
	}
	out, err := Search(context.Background(), trial, Config{MinRate: 1, MaxRate: 8, Resolution: 0.3, Confirm: 3})
	c := out.Capacity
	if err != nil || c.RateRPS != 4 || c.HighRPS != 5 || c.Inconclusive != "" || c.RateTrials != [2]int{3, 3} || calls[5] != 5 {
		t.Errorf("%v: capacity %v [%v, %v), %v at it, %d trials at 5, inconclusive %q", err, c.RateRPS, c.LowRPS, c.HighRPS, c.RateTrials, calls[5], c.Inconclusive)
	}
	// The interval runs across the bracket, wider than it: the trials'
	// pass/fail tells little of how steeply they fall between 4 and 5.
	if iv := c.Interval; iv == nil || iv.LowRPS >= 4 || iv.HighRPS <= 5 || iv.Trials != [2]int{3, 5} {
		t.Errorf("interval %+v", iv)
	}
	// When the repeats bear the pass out, the capacity stands.
	out, err = Search(context.Background(), (&server{Knee: 5.5}).trial, Config{MinRate: 1, MaxRate: 8, Resolution: 0.3, Confirm: 3})
	if c := out.Capacity; err != nil || c.Inconclusive != "" || c.RateRPS != 5 {
		t.Errorf("a steady server: %v, capacity %v, inconclusive %q", err, c.RateRPS, c.Inconclusive)
	}
}
