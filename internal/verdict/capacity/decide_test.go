package capacity

import (
	"context"
	"strings"
	"testing"

	"github.com/spate-dev/spate/result"
)

func TestDecision(t *testing.T) {
	for _, c := range []struct {
		passed, n int
		want      verdict
	}{
		{0, 0, undecided},
		{1, 1, undecided},
		{2, 2, undecided},
		{3, 3, passes},
		{0, 3, fails},
		{2, 3, undecided},
		{4, 5, passes},
		{1, 5, fails},
		{3, 6, undecided},
		{5, 7, passes},
	} {
		if got := (tally{c.passed, c.n}).decision(); got != c.want {
			t.Errorf("%d of %d passed: %v, want %v", c.passed, c.n, got, c.want)
		}
	}
}

// TestDecisionErrors works out exactly, over every sequence of trials up
// to MaxRateTrials, how often the sequential test decides wrongly: that a
// rate whose trials pass once in 4 passes, or one whose trials pass 3
// times in 4 fails — at most 1 − DecisionConfidence each — and how often
// it decides at all at the knee, where trials pass half the time.
func TestDecisionErrors(t *testing.T) {
	// decide returns the chances of deciding pass and fail when each
	// trial passes with probability p.
	decide := func(p float64) (pass, fail float64) {
		probs := map[tally]float64{{}: 1}
		for range MaxRateTrials {
			next := map[tally]float64{}
			for tl, w := range probs {
				switch tl.decision() {
				case passes:
					pass += w
					continue
				case fails:
					fail += w
					continue
				}
				next[tally{tl.passed + 1, tl.n + 1}] += w * p
				next[tally{tl.passed, tl.n + 1}] += w * (1 - p)
			}
			probs = next
		}
		for tl, w := range probs {
			switch tl.decision() {
			case passes:
				pass += w
			case fails:
				fail += w
			}
		}
		return pass, fail
	}
	if pass, _ := decide(decisionFail); pass > 1-DecisionConfidence {
		t.Errorf("trials passing once in 4 decided to pass with chance %.4f", pass)
	}
	if _, fail := decide(decisionPass); fail > 1-DecisionConfidence {
		t.Errorf("trials passing 3 times in 4 decided to fail with chance %.4f", fail)
	}
	pass, fail := decide(0.5)
	t.Logf("at the knee: decided to pass %.3f, to fail %.3f, undecided %.3f; a quarter: pass %.4f", pass, fail, 1-pass-fail, func() float64 { p, _ := decide(0.25); return p }())
	if d := 1 - pass - fail; d < 0.2 {
		t.Errorf("at the knee the test decided %.3f of the time", 1-d)
	}
}

// TestCoinTossKnee: the real engine, whose 10 s trials near its
// knee were a coin toss — below 8.5 req/s they pass, from 8.5 to 10 one
// in two does, above they fail. The search printed "capacity: 9 req/s"
// on one lucky pass. The capacity reported is now a rate decided to pass
// (under 8.5), and the rates the trials could not separate are named.
func TestCoinTossKnee(t *testing.T) {
	tosses := 0
	trial := func(ctx context.Context, l Load) (*result.Scenario, error) {
		sc, err := (&server{Knee: 100}).trial(ctx, l)
		switch {
		case l.Rate >= 10:
			sc.Goodput.Fraction = 0.5
		case l.Rate >= 8.5:
			if tosses++; tosses%2 == 0 {
				sc.Goodput.Fraction = 0.5
			}
		}
		return sc, err
	}
	for _, from := range []float64{1, 3, 4.5} {
		out, err := Search(context.Background(), trial, Config{MinRate: from, MaxRate: 64})
		if err != nil {
			t.Fatal(err)
		}
		c := out.Capacity
		if c.RateRPS >= 8.5 || c.RateRPS == 0 || c.Inconclusive != "" {
			t.Errorf("from %v req/s: capacity %v [%v, %v), inconclusive %q", from, c.RateRPS, c.LowRPS, c.HighRPS, c.Inconclusive)
		}
		if w := strings.Join(c.Warnings, "\n"); strings.Contains(w, "could not separate") != (c.HighRPS > 8.5) {
			t.Errorf("from %v req/s: bracket [%v, %v), warnings %q", from, c.LowRPS, c.HighRPS, w)
		}
	}
}

// TestGoodputDecision: a rate passes when its trials' mean goodput is
// surely at least the target, fails when surely under it, and is
// undecided between; the margin is at least the binomial spread of the
// trials' requests pooled at the target, so two trials of 10 requests
// that agree do not decide. Trials that pass 4 times in 5, the fifth far under the target,
// do not pass (their mean, 89 %, is under it; a long run at the rate
// would miss it), nor yet surely fail.
func TestGoodputDecision(t *testing.T) {
	for _, c := range []struct {
		name     string
		goodputs []float64
		requests int
		want     verdict
	}{
		{"one trial", []float64{1}, 200, undecided},
		{"three clean trials of 200", []float64{1, 0.995, 1}, 200, passes},
		{"two clean trials of 10", []float64{1, 1}, 10, undecided},
		{"three clean trials of 48", []float64{1, 1, 1}, 48, passes},
		{"just over the target", []float64{0.96, 0.955, 0.962}, 200, undecided},
		{"four good, one far under", []float64{0.98, 0.97, 0.99, 0.98, 0.55}, 150, undecided},
		{"under on the whole", []float64{0.96, 0.6, 0.955, 0.5, 0.7, 0.65}, 150, fails},
		{"surely under", []float64{0.8, 0.82, 0.79}, 200, fails},
	} {
		s := newSearcher(nil, Config{}.withDefaults(), "adaptive")
		for _, g := range c.goodputs {
			s.goodputs[10] = append(s.goodputs[10], g)
			s.requests[10] = append(s.requests[10], c.requests)
		}
		if got := s.goodputDecision(10); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestGoodputWindow: a rate's goodput is judged with the trials up to
// GoodputWindow above it. Three clean trials (no request lost) pass with
// a clean trial just above, as before a cliff; with a bad one just above
// they are undecided, not failed — only the rate's own trials fail it; a
// bad trial beyond the window does not count. Three trials that each
// lost about 1 % do not pass on their own (a shortfall that size may be a
// rate whose bursts they missed), nor with a burst just above; six such
// with a good neighbour do.
func TestGoodputWindow(t *testing.T) {
	type at struct {
		rate     float64
		goodputs []float64
	}
	for _, c := range []struct {
		name   string
		trials []at
		want   verdict
	}{
		{"clean, clean above", []at{{10, []float64{1, 1, 1}}, {11.1, []float64{1}}}, passes},
		{"clean, bad above", []at{{10, []float64{1, 1, 1}}, {10.5, []float64{0.6}}}, undecided},
		{"clean, bad beyond the window", []at{{10, []float64{1, 1, 1}}, {11.2, []float64{0.6}}}, passes},
		{"a little short, alone", []at{{10, []float64{0.99, 0.985, 0.99}}}, undecided},
		{"a little short, a burst above", []at{{10, []float64{0.99, 0.985, 0.99}}, {10.8, []float64{0.97, 0.8}}}, undecided},
		{"a little short, six and good above", []at{{10, []float64{0.99, 0.985, 0.99, 0.995, 0.99, 0.985}}, {10.5, []float64{0.99, 0.98}}}, passes},
		{"surely under, good above", []at{{10, []float64{0.8, 0.82, 0.79}}, {10.5, []float64{1}}}, fails},
	} {
		s := newSearcher(nil, Config{}.withDefaults(), "adaptive")
		for _, a := range c.trials {
			for _, g := range a.goodputs {
				s.goodputs[a.rate] = append(s.goodputs[a.rate], g)
				s.requests[a.rate] = append(s.requests[a.rate], 150)
			}
		}
		if got := s.goodputDecision(10); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
