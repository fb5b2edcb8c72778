package metrics

import (
	"math"
	"slices"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/result"
)

// ICE, inference consistency entropy (seed 004 §3.2; docs/design.md §3):
// per turn, the mean next-token entropy of the answer, from its top
// logprobs (record.Record.Entropy); per conversation, the standard
// deviation (n − 1) of that entropy over its turns, as the seed's
// torch.std. A conversation is the turns of one request (record.Record.Seq);
// one with fewer than two turns with logprobs has no ICE. The stage gives
// the mean, median, P90 and maximum over its conversations, overall and per
// intent.
//
// The seed computes each turn's entropy from the full softmax over the
// vocabulary; APIs return the top k logprobs (20 at most). A token's
// entropy is estimated with the tail bucket: H = −Σ p_i ln p_i − r ln r
// over the top list's probabilities p_i, the rest r = 1 − Σ p_i taken as
// one more outcome. That is a lower bound of the true entropy, whose error
// is at most r·ln(V − k) for a vocabulary of V tokens (the tail spread
// evenly over the others): the result gives the mean tail mass and that
// bound (record.Record.EntropyBound, V = 256,000) beside ICE. Renormalising
// the top k instead is not a bound either way, so spate does not.

// iceConv is the running entropy of one conversation's turns (Welford).
type iceConv struct {
	n        int
	mean, m2 float64
	intent   string
}

// iceAgg accumulates a stage's entropies; memory grows by one iceConv per
// conversation that asked for logprobs.
type iceAgg struct {
	convs                      map[uint64]*iceConv
	turns                      int
	sumEntropy, sumTail, bound float64
}

func (a *iceAgg) add(rec *record.Record) {
	if rec.Failed() || rec.EntropyTokens == 0 {
		return
	}
	if a.convs == nil {
		a.convs = map[uint64]*iceConv{}
	}
	c := a.convs[rec.Seq]
	if c == nil {
		c = &iceConv{intent: rec.Intent}
		a.convs[rec.Seq] = c
	}
	c.n++
	d := rec.Entropy - c.mean
	c.mean += d / float64(c.n)
	c.m2 += d * (rec.Entropy - c.mean)
	a.turns++
	a.sumEntropy += rec.Entropy
	a.sumTail += rec.TailMass
	a.bound = max(a.bound, rec.EntropyBound)
}

// figures summarises the ICE of conversations.
func iceFigures(ices []float64) result.ICEFigures {
	f := result.ICEFigures{Conversations: len(ices)}
	if len(ices) == 0 {
		return f
	}
	slices.Sort(ices)
	var sum float64
	for _, v := range ices {
		sum += v
	}
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(ices))/100-1e-9)) - 1
		return ices[min(max(i, 0), len(ices)-1)]
	}
	f.Mean, f.P50, f.P90, f.Max = sum/float64(len(ices)), rank(50), rank(90), ices[len(ices)-1]
	return f
}

func (a *iceAgg) result() *result.ICE {
	if a.turns == 0 {
		return nil
	}
	r := &result.ICE{Turns: a.turns, MeanEntropy: a.sumEntropy / float64(a.turns),
		TailMassMean: a.sumTail / float64(a.turns), ErrorBound: a.bound, ByIntent: map[string]result.ICEFigures{}}
	var all []float64
	byIntent := map[string][]float64{}
	for _, c := range a.convs {
		if c.n < 2 {
			r.Single++
			continue
		}
		v := math.Sqrt(c.m2 / float64(c.n-1))
		all = append(all, v)
		if c.intent != "" {
			byIntent[c.intent] = append(byIntent[c.intent], v)
		}
	}
	r.ICEFigures = iceFigures(all)
	for k, v := range byIntent {
		r.ByIntent[k] = iceFigures(v)
	}
	if len(r.ByIntent) == 0 {
		r.ByIntent = nil
	}
	if len(all) == 0 {
		r.Warnings = append(r.Warnings, "no conversation had two turns with logprobs: there is no ICE (it is a spread over a conversation's turns: give the workload turns)")
	}
	if r.TailMassMean > 0.05 {
		r.Warnings = append(r.Warnings, "the top logprobs missed over 5 % of the probability on average: the entropies are lower bounds, up to the error bound below the true ones (ask for more top logprobs)")
	}
	return r
}
