package capacity

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/spate-dev/spate/result"
)

// server is a fake with a known capacity: goodput is 1 up to Knee req/s
// and falls beyond; it delivers at most MaxRate; past GrowAbove its TTFT
// grows through the trial.
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
	if s.MaxRate > 0 {
		sc.Load.AchievedRate = math.Min(l.Rate, s.MaxRate)
	}
	sc.Goodput.Fraction = 1
	sc.Metrics = map[string]result.Dist{"ttft_ms": {Count: 100, P99: 100 + 10*l.Rate}}
	if l.Rate > s.Knee {
		sc.Goodput.Fraction = math.Max(0, 1-(l.Rate-s.Knee)/s.Knee*5)
	}
	for i := range 11 {
		ttft := 100.0
		if s.GrowAbove > 0 && l.Rate > s.GrowAbove {
			ttft += 30 * float64(i)
		}
		sc.Series.SentPerS = append(sc.Series.SentPerS, 5)
		sc.Series.CompletedPerS = append(sc.Series.CompletedPerS, 5)
		sc.Series.TTFTp50ms = append(sc.Series.TTFTp50ms, ttft)
	}
	return sc, nil
}

func TestSearchBisects(t *testing.T) {
	s := &server{Knee: 7.3}
	out, err := Search(context.Background(), s.trial, Config{MinRate: 1, MaxRate: 100, Resolution: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	c := out.Capacity
	// 1, 2, 4 pass, 8 fails; then 6 ✓, 7 ✓, 7.5 ✗, 7.25 ✓: (7.5−7.25)/7.5 = 3.3 %.
	if c.LowRPS != 7.25 || c.HighRPS != 7.5 || c.RateRPS != 7.25 || len(c.Trials) != 8 || len(out.Scenarios) != 8 {
		t.Errorf("capacity [%v, %v] after %d trials, want [7.25, 7.5] after 8", c.LowRPS, c.HighRPS, len(c.Trials))
	}
	if math.Abs(c.Resolution-0.25/7.5) > 1e-12 || c.Saturated || c.GoodputMin != 1 {
		t.Errorf("resolution %v saturated %v goodput %v", c.Resolution, c.Saturated, c.GoodputMin)
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
}

func TestSearchEdges(t *testing.T) {
	out, _ := Search(context.Background(), (&server{Knee: 0.5}).trial, Config{MinRate: 1, MaxRate: 10})
	if c := out.Capacity; c.RateRPS != 0 || c.HighRPS != 1 || len(c.Trials) != 1 || !strings.Contains(c.Warnings[0], "--min-rate") {
		t.Errorf("min rate fails: %+v", c)
	}
	out, _ = Search(context.Background(), (&server{Knee: 100}).trial, Config{MinRate: 1, MaxRate: 10})
	if c := out.Capacity; c.RateRPS != 10 || c.HighRPS != 0 || len(c.Trials) != 5 || !strings.Contains(c.Warnings[0], "--max-rate") {
		t.Errorf("max rate passes: rate %v high %v trials %d %v", c.RateRPS, c.HighRPS, len(c.Trials), c.Warnings)
	}
	out, err := Search(context.Background(), (&server{Knee: 7.3}).trial, Config{MinRate: 1, MaxRate: 100, Resolution: 0.001, MaxTrials: 6})
	if err != nil || len(out.Capacity.Trials) != 6 || !strings.Contains(out.Capacity.Warnings[0], "stopped after 6") {
		t.Errorf("max trials: %v %d %v", err, len(out.Capacity.Trials), out.Capacity.Warnings)
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

// TestRepeatsMajority: each rate is tried three times and passes on a
// majority; the goodput spread at the capacity is reported.
func TestRepeatsMajority(t *testing.T) {
	n := 0
	trial := func(_ context.Context, l Load) (*result.Scenario, error) {
		n++
		sc := &result.Scenario{Load: result.Load{Valid: true, AchievedRate: l.Rate}, Requests: result.Requests{Succeeded: 1}}
		// Below 5 req/s two of three trials pass (goodput 0.97, 0.9,
		// 0.99); from 5 on, one of three.
		g := []float64{0.97, 0.9, 0.99}[n%3]
		if l.Rate >= 5 {
			g = []float64{0.97, 0.9, 0.5}[n%3]
		}
		sc.Goodput.Fraction = g
		return sc, nil
	}
	out, err := Search(context.Background(), trial, Config{MinRate: 1, MaxRate: 100, Resolution: 0.2, Repeats: 3})
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
	out, err := Sweep(context.Background(), s.trial, SweepConfig{Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	c := out.Capacity
	// Steps of 20: 4, 8, 12, 14, 16 (fails: goodput), 18, 20.
	if c.ClosedLoopMaxRPS != 20 || c.Concurrency != 8 || math.Abs(c.RateRPS-14) > 1e-9 || math.Abs(c.HighRPS-16) > 1e-9 || len(c.Trials) != 8 {
		t.Errorf("sweep: max %v, capacity [%v, %v], %d trials", c.ClosedLoopMaxRPS, c.RateRPS, c.HighRPS, len(c.Trials))
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
	out, _ = Sweep(context.Background(), s.trial, SweepConfig{})
	// 12 req/s delivers 11 (92 % ≥ 90 %): passes; 14 delivers 11 (79 %).
	if c := out.Capacity; !c.Saturated || len(c.Trials) != 5 || math.Abs(c.RateRPS-12) > 1e-9 || math.Abs(c.HighRPS-14) > 1e-9 {
		t.Errorf("saturated sweep: %+v", c)
	}
}

func TestJudge(t *testing.T) {
	ok := result.Scenario{Load: result.Load{Valid: true, AchievedRate: 10}, Requests: result.Requests{Succeeded: 5}, Goodput: result.Goodput{Fraction: 0.96}}
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
		{"underdelivered", func(*result.Scenario) {}, 11.2, ReasonUnderdelivery},
		{"closed loop has no rate to deliver", func(*result.Scenario) {}, 0, ""},
		// A Poisson schedule that happened to draw 10.5 req/s for 12 asked.
		{"realised schedule", func(s *result.Scenario) { s.Load.ScheduledRate = 10.5 }, 12, ""},
		{"under the realised schedule", func(s *result.Scenario) { s.Load.ScheduledRate = 11.2 }, 10, ReasonUnderdelivery},
		// TTFT p50 100 → 400 ms over 4 s (slope 100 ms/s × 4 s = 400 ms,
		// 1.6× the median 250): a queue.
		{"ttft growing", func(s *result.Scenario) { s.Series = grow(100, 200, 300, 400) }, 10, ReasonTTFTGrowing},
		// The same growth is within jitter of a 2 s SLO (needs > 1 s).
		{"ttft growth under half the SLO", func(s *result.Scenario) {
			s.Series = grow(100, 200, 300, 400)
			s.Goodput.SLOms = map[string]float64{"ttft": 2000}
		}, 10, ""},
		{"steady ttft", func(s *result.Scenario) { s.Series = grow(100, 130, 90, 110) }, 10, ""},
	} {
		sc := ok
		c.edit(&sc)
		pass, reason := Judge(&sc, c.rate, Criteria{})
		if pass != (c.reason == "") || reason != c.reason {
			t.Errorf("%s: %v %q, want %q", c.name, pass, reason, c.reason)
		}
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
