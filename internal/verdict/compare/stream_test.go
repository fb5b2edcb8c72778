package compare

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/spate-dev/spate/result"
)

// stream is a streamed service drawn request by request, the way spate
// records one: in each second Poisson(Rate) requests complete, each with a
// lognormal TTFT and a lognormal decode speed (its TPOT), its Tokens − 1
// gaps lognormal around that speed; on a busy machine the client's
// scheduler now and then delays a gap (with chance StallP, by an
// exponential time of mean StallMS), which no change of the server
// touches. A second's columns are the percentiles and means of the
// requests (TTFT, TPOT, E2E) and gaps (ITL) that completed in it.
type stream struct {
	Secs            int     // seconds of sending (the last one's send is partial)
	Rate            float64 // requests a second
	TTFTms, TTFTcv  float64 // mean and coefficient of variation over requests
	TPOTms, TPOTcv  float64 // a request's mean gap, over requests
	GapCV           float64 // a gap around its request's TPOT
	StallP, StallMS float64
	Tokens          int
	SLOms           float64 // the E2E SLO of goodput
	ErrRate         float64
	TTFTx, DecodeX  float64 // multiply every TTFT and every gap (0: 1): a planted change
}

// realistic is a streamed chat service at 10 req/s for 10 s (8 seconds
// compared after the settling second and before the partial last one):
// TTFT 100 ms and 19 gaps of 15 ms, each with a CV of 0.1 (TTFT and the
// decode speed over requests, a gap within its request), 2 % of gaps
// delayed by the client (10 ms on average: ITL p99 is mostly that
// jitter), 1 % errors. With a CV of 0.2 or more, 10 s runs are too short
// to find +10 % at the default gate's family-wise 1 % (docs/compare.md).
var realistic = stream{Secs: 10, Rate: 10, TTFTms: 100, TTFTcv: 0.1, TPOTms: 15, TPOTcv: 0.1, GapCV: 0.1,
	StallP: 0.02, StallMS: 10, Tokens: 20, SLOms: 600, ErrRate: 0.01}

// lognormal draws from the lognormal with this mean and coefficient of
// variation.
func lognormal(rng *rand.Rand, mean, cv float64) float64 {
	s2 := math.Log(1 + cv*cv)
	return mean * math.Exp(math.Sqrt(s2)*rng.NormFloat64()-s2/2)
}

// quantile is the nearest-rank q-quantile of sorted xs.
func quantile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// summarise appends a second's p50, p99 and mean of xs (sorted in place)
// to the columns, or zeros (no value) when xs is empty.
func summarise(xs []float64, p50, p99, avg *[]float64) {
	if len(xs) == 0 {
		*p50, *p99, *avg = append(*p50, 0), append(*p99, 0), append(*avg, 0)
		return
	}
	slices.Sort(xs)
	*p50, *p99, *avg = append(*p50, quantile(xs, 0.5)), append(*p99, quantile(xs, 0.99)), append(*avg, mean(xs))
}

func (m stream) result(seed uint64, sut string) *result.Result {
	rng := rand.New(rand.NewPCG(seed, 33))
	ttftX, decodeX := m.TTFTx, m.DecodeX
	if ttftX == 0 {
		ttftX = 1
	}
	if decodeX == 0 {
		decodeX = 1
	}
	var s result.Series
	var allTTFT, allITL, allTPOT, allE2E []float64
	total, failed, good := 0, 0, 0
	for range m.Secs {
		n := poisson(rng, m.Rate)
		var ttft, itl, tpot, e2e []float64
		errs, ok := 0, 0
		for range n {
			if rng.Float64() < m.ErrRate {
				errs++
				continue
			}
			first := ttftX * lognormal(rng, m.TTFTms, m.TTFTcv)
			speed := decodeX * lognormal(rng, m.TPOTms, m.TPOTcv)
			decode := 0.0
			for range m.Tokens - 1 {
				gap := speed * lognormal(rng, 1, m.GapCV)
				if rng.Float64() < m.StallP {
					gap += rng.ExpFloat64() * m.StallMS
				}
				itl = append(itl, gap)
				decode += gap
			}
			ttft = append(ttft, first)
			tpot = append(tpot, decode/float64(m.Tokens-1))
			e2e = append(e2e, first+decode)
			if first+decode <= m.SLOms {
				ok++
			}
		}
		allTTFT, allITL = append(allTTFT, ttft...), append(allITL, itl...)
		allTPOT, allE2E = append(allTPOT, tpot...), append(allE2E, e2e...)
		total, failed, good = total+n, failed+errs, good+ok
		s.SentPerS = append(s.SentPerS, n)
		s.CompletedPerS = append(s.CompletedPerS, n)
		s.ErrorsPerS = append(s.ErrorsPerS, errs)
		s.InFlight = append(s.InFlight, n)
		s.GoodPerS = append(s.GoodPerS, ok)
		s.OutputTokens = append(s.OutputTokens, int64(n-errs)*int64(m.Tokens))
		summarise(ttft, &s.TTFTp50ms, &s.TTFTp99ms, &s.TTFTMeanMS)
		summarise(itl, &s.ITLp50ms, &s.ITLp99ms, &s.ITLMeanMS)
		summarise(tpot, &s.TPOTp50ms, &s.TPOTp99ms, &s.TPOTMeanMS)
		summarise(e2e, &s.E2Ep50ms, &s.E2Ep99ms, &s.E2EMeanMS)
	}
	// The last second's send was partial: it is not compared.
	s.SentPerS[len(s.SentPerS)-1] = max(1, s.SentPerS[len(s.SentPerS)-1])
	dist := func(xs []float64) result.Dist {
		if len(xs) == 0 {
			return result.Dist{}
		}
		slices.Sort(xs)
		return result.Dist{Count: int64(len(xs)), P50: quantile(xs, 0.5), P99: quantile(xs, 0.99), Mean: mean(xs)}
	}
	sc := result.Scenario{
		Name: "main", Load: result.Load{Mode: "open", TargetRate: m.Rate, Valid: true},
		Requests:   result.Requests{Total: total, Succeeded: total - failed, Failed: failed},
		Throughput: result.Throughput{RequestsPerS: float64(total-failed) / float64(m.Secs)},
		Metrics: map[string]result.Dist{"ttft_ms": dist(allTTFT), "itl_ms": dist(allITL),
			"tpot_ms": dist(allTPOT), "e2e_ms": dist(allE2E)},
		Goodput: result.Goodput{Fraction: float64(good) / float64(max(total, 1)), SLOms: map[string]float64{"e2e": m.SLOms}},
		Series:  s,
	}
	return &result.Result{
		Schema: result.Schema, Fingerprint: "f",
		Provenance: result.Provenance{Model: "m", SUTVersion: sut, WorkloadSHA256: "w", API: "chat"},
		Config:     result.Config{Arrival: "poisson", Rate: m.Rate, Duration: "10s"},
		Scenarios:  []result.Scenario{sc},
	}
}
