package compare

import (
	"math"
	"math/rand/v2"

	"github.com/spate-dev/spate/result"
)

// model is a known per-second process a synthetic run is drawn from:
// Poisson completions at Rate, latencies around their means with
// multiplicative AR(1) noise (requests of one run are not independent),
// and a Bernoulli error rate.
type model struct {
	Secs             int
	Rate             float64
	TTFTms, E2Ems    float64 // p50; the p99 is 2× and the mean 1.2×
	ITLms            float64 // p50 of the gaps (0: not streamed)
	Noise, Phi       float64 // sd of the per-second log-noise, and its lag-1 autocorrelation
	ErrRate          float64
	P99Factor        float64 // multiplies the p99 columns (a planted regression)
	OutTokPerRequest int64
}

func (m model) result(seed uint64, sut string) *result.Result {
	rng := rand.New(rand.NewPCG(seed, 99))
	f := m.P99Factor
	if f == 0 {
		f = 1
	}
	var s result.Series
	var z float64
	for i := 0; i < m.Secs; i++ {
		z = m.Phi*z + math.Sqrt(1-m.Phi*m.Phi)*rng.NormFloat64()*m.Noise
		n := poisson(rng, m.Rate)
		errs := 0
		for range n {
			if rng.Float64() < m.ErrRate {
				errs++
			}
		}
		k := math.Exp(z)
		s.SentPerS = append(s.SentPerS, n)
		s.CompletedPerS = append(s.CompletedPerS, n)
		s.ErrorsPerS = append(s.ErrorsPerS, errs)
		s.InFlight = append(s.InFlight, n)
		s.OutputTokens = append(s.OutputTokens, int64(n-errs)*m.OutTokPerRequest)
		s.TTFTp50ms = append(s.TTFTp50ms, m.TTFTms*k)
		s.TTFTp99ms = append(s.TTFTp99ms, 2*m.TTFTms*k*f)
		s.TTFTMeanMS = append(s.TTFTMeanMS, 1.2*m.TTFTms*k)
		s.E2Ep50ms = append(s.E2Ep50ms, m.E2Ems*k)
		s.E2Ep99ms = append(s.E2Ep99ms, 2*m.E2Ems*k*f)
		s.E2EMeanMS = append(s.E2EMeanMS, 1.2*m.E2Ems*k)
		s.GoodPerS = append(s.GoodPerS, n-errs)
		if m.ITLms > 0 {
			s.ITLp50ms = append(s.ITLp50ms, m.ITLms*k)
			s.ITLp99ms = append(s.ITLp99ms, 2*m.ITLms*k*f)
			s.ITLMeanMS = append(s.ITLMeanMS, 1.2*m.ITLms*k)
		}
	}
	// One more second with a send: the partial last second.
	s.SentPerS = append(s.SentPerS, 1)
	total, failed := 0, 0
	for i := range s.CompletedPerS {
		total += s.CompletedPerS[i]
		failed += s.ErrorsPerS[i]
	}
	avg := func(xs []float64) float64 { return mean(xs) }
	sc := result.Scenario{
		Name: "main", Load: result.Load{Mode: "open", TargetRate: m.Rate, Valid: true},
		Requests:   result.Requests{Total: total, Succeeded: total - failed, Failed: failed},
		Throughput: result.Throughput{RequestsPerS: float64(total-failed) / float64(m.Secs)},
		Metrics: map[string]result.Dist{
			"ttft_ms": {Count: int64(total), P50: avg(s.TTFTp50ms), P99: avg(s.TTFTp99ms), Mean: avg(s.TTFTMeanMS)},
			"e2e_ms":  {Count: int64(total), P50: avg(s.E2Ep50ms), P99: avg(s.E2Ep99ms), Mean: avg(s.E2EMeanMS)},
		},
		Goodput: result.Goodput{Fraction: 1 - float64(failed)/float64(total), SLOms: map[string]float64{"e2e": 5000}},
		Series:  s,
	}
	if m.ITLms > 0 {
		sc.Metrics["itl_ms"] = result.Dist{Count: int64(total), P50: avg(s.ITLp50ms), P99: avg(s.ITLp99ms), Mean: avg(s.ITLMeanMS)}
	}
	return &result.Result{
		Schema: result.Schema, Fingerprint: "f",
		Provenance: result.Provenance{Model: "m", SUTVersion: sut, WorkloadSHA256: "w", API: "chat"},
		Config:     result.Config{Arrival: "poisson", Rate: m.Rate, Duration: "60s"},
		Scenarios:  []result.Scenario{sc},
	}
}

func poisson(rng *rand.Rand, lambda float64) int {
	// Knuth's method; lambda is small in these tests.
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

var baseModel = model{Secs: 120, Rate: 20, TTFTms: 100, E2Ems: 800, ITLms: 20, Noise: 0.04, Phi: 0.5, ErrRate: 0.01, OutTokPerRequest: 64}
