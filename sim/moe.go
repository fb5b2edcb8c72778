package sim

import (
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// exactRoutingLimit is the most token→expert routes a step simulates one by
// one; larger steps use a normal approximation of each expert's load.
const exactRoutingLimit = 4096

// moeModel draws the expert routing of each step.
type moeModel struct {
	cfg   MoEConfig
	p     []float64 // routing probability of each expert
	cum   []float64 // cumulative p
	loads []int
	pick  []int
}

func newMoEModel(cfg MoEConfig) *moeModel {
	m := &moeModel{cfg: cfg, p: make([]float64, cfg.Experts), cum: make([]float64, cfg.Experts), loads: make([]int, cfg.Experts), pick: make([]int, 0, cfg.TopK)}
	var sum float64
	for i := range m.p {
		m.p[i] = 1 / math.Pow(float64(i+1), cfg.Skew)
		sum += m.p[i]
	}
	acc := 0.0
	for i := range m.p {
		m.p[i] /= sum
		acc += m.p[i]
		m.cum[i] = acc
	}
	m.cum[len(m.cum)-1] = 1
	return m
}

// stepCost routes tokens tokens and returns the MoE term of the step time:
// ExpertLoad per activated expert plus PerTokenCompute per token routed to
// the busiest expert.
func (m *moeModel) stepCost(tokens int, rng *rand.Rand) time.Duration {
	if tokens <= 0 {
		return 0
	}
	clear(m.loads)
	k := m.cfg.TopK
	if tokens*k <= exactRoutingLimit {
		for range tokens {
			m.pick = m.pick[:0]
			for len(m.pick) < k {
				e := sort.SearchFloat64s(m.cum, rng.Float64())
				if e >= len(m.cum) {
					e = len(m.cum) - 1
				}
				dup := false
				for _, x := range m.pick {
					dup = dup || x == e
				}
				if !dup {
					m.pick = append(m.pick, e)
				}
			}
			for _, e := range m.pick {
				m.loads[e]++
			}
		}
	} else {
		routes := float64(tokens * k)
		for i, p := range m.p {
			pi := math.Min(p*float64(k), 1) / float64(k) // inclusion is capped at once per token
			mean := routes * pi
			sd := math.Sqrt(routes * pi * (1 - pi))
			l := int(math.Round(mean + sd*rng.NormFloat64()))
			m.loads[i] = max(0, min(l, tokens))
		}
	}
	active, busiest := 0, 0
	for _, l := range m.loads {
		if l > 0 {
			active++
		}
		busiest = max(busiest, l)
	}
	return time.Duration(active)*m.cfg.ExpertLoad + time.Duration(busiest)*m.cfg.PerTokenCompute
}
