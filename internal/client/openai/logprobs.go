package openai

import (
	"bytes"
	"math"

	"github.com/valyala/fastjson"

	"github.com/spate-dev/spate/internal/record"
)

// Logprobs: a request that asks for them (Config.Logprobs or
// workload.Request.Logprobs, N top logprobs a token) sends chat's
// "logprobs": true, "top_logprobs": N or completions' "logprobs": N; the
// client reads every generated token's top list, streamed or whole, and
// keeps the mean token entropy of the answer in the record for ICE
// (internal/metrics/ice.go).
//
// A token's entropy is estimated from its top list with the tail bucket:
// the list is deduplicated by token (vLLM's is built from a map that also
// holds the sampled token, and need not be sorted), p_i = exp(logprob_i)
// (OpenAI's −9999 "very unlikely" counts 0), S = Σ p_i, the tail
// r = max(0, 1 − S) one more outcome: H = −Σ p_i ln p_i − r ln r. That is a
// lower bound of the entropy over the whole vocabulary; the most it can be
// below is r·ln(V − k) (the tail spread evenly over the V − k other
// tokens), kept as the record's EntropyBound with V = vocabSize.
// Renormalising over the top k instead (dividing by S) is neither a lower
// nor an upper bound, so spate does not. Tokens without a top list
// (top_logprobs 0) carry no estimate and are not counted.

// vocabSize is the vocabulary the error bound assumes: a large modern
// tokenizer's (Llama 3 has 128,256 tokens, Gemma 256,000); the bound grows
// only as its logarithm.
const vocabSize = 256_000

// maxTopLogprobs is the most top logprobs a token can ask for (OpenAI's
// chat limit, vLLM's default --max-logprobs).
const maxTopLogprobs = 20

// entropyAcc sums a response's token entropies.
type entropyAcc struct {
	n                 int
	sumH, sumR, sumUB float64
	// toks and lps are one position's deduplicated top list (scratch).
	toks [][]byte
	lps  []float64
}

func (a *entropyAcc) reset() { a.n, a.sumH, a.sumR, a.sumUB = 0, 0, 0, 0 }

// begin starts a position's top list.
func (a *entropyAcc) begin() { a.toks, a.lps = a.toks[:0], a.lps[:0] }

// add adds a token of the current position's top list; a token already in
// it is skipped.
func (a *entropyAcc) add(tok []byte, lp float64) {
	for _, t := range a.toks {
		if bytes.Equal(t, tok) {
			return
		}
	}
	a.toks, a.lps = append(a.toks, tok), append(a.lps, lp)
}

// end closes the position: its entropy estimate joins the sums when the
// list held any token.
func (a *entropyAcc) end() {
	if len(a.lps) == 0 {
		return
	}
	h, r := tailEntropy(a.lps)
	a.n++
	a.sumH += h
	a.sumR += r
	if r > 0 && len(a.lps) < vocabSize {
		a.sumUB += r * math.Log(float64(vocabSize-len(a.lps)))
	}
}

// tailEntropy is the tail-bucket entropy estimate (nats) of a top list of
// log probabilities, and its tail mass.
func tailEntropy(lps []float64) (h, r float64) {
	var s float64
	for _, lp := range lps {
		if math.IsNaN(lp) || lp > 0 {
			lp = 0 // a malformed logprob: count it as certain, capped below
		}
		p := math.Exp(lp)
		if p > 0 {
			h -= p * lp
			s += p
		}
	}
	if r = 1 - s; r > 1e-12 {
		h -= r * math.Log(r)
	} else {
		r = 0
	}
	return max(h, 0), r
}

// fill sets the record's entropy fields from the sums.
func (a *entropyAcc) fill(rec *record.Record) {
	if a.n == 0 {
		return
	}
	n := float64(a.n)
	rec.Entropy, rec.EntropyTokens, rec.TailMass, rec.EntropyBound = a.sumH/n, a.n, a.sumR/n, a.sumUB/n
}

// readLogprobs reads a choice's "logprobs" object, chat's (content[]
// with top_logprobs[] of {token, logprob}) or completions' (top_logprobs[]
// of {token: logprob} maps), into the sums.
func (a *entropyAcc) readLogprobs(lp *fastjson.Value) {
	if lp == nil || lp.Type() != fastjson.TypeObject {
		return
	}
	if content := lp.Get("content"); content != nil {
		for _, e := range content.GetArray() {
			a.begin()
			for _, t := range e.GetArray("top_logprobs") {
				if v := t.Get("logprob"); v != nil && v.Type() == fastjson.TypeNumber {
					a.add(t.GetStringBytes("token"), v.GetFloat64())
				}
			}
			a.end()
		}
		return
	}
	for _, m := range lp.GetArray("top_logprobs") {
		o, err := m.Object()
		if err != nil {
			continue // null: no list for the position
		}
		a.begin()
		o.Visit(func(k []byte, v *fastjson.Value) {
			if v.Type() == fastjson.TypeNumber {
				a.add(k, v.GetFloat64())
			}
		})
		a.end()
	}
}

// logprobsFields are the body fields asking for n top logprobs (n ≤ 0:
// none, capped at maxTopLogprobs) on api: chat's logprobs true and
// top_logprobs n, completions' logprobs n.
func logprobsFields(api string, n int) (logprobs any, top *int) {
	if n <= 0 {
		return nil, nil
	}
	n = min(n, maxTopLogprobs)
	if api == Completions {
		return n, nil
	}
	return true, &n
}
