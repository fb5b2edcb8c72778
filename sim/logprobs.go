package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Logprobs: a request that asks for them (chat: "logprobs": true with
// "top_logprobs": N; completions: "logprobs": N; N ≤ MaxTopLogprobs) gets,
// for every generated token, the N most likely tokens with their log
// probabilities. The distribution is planted: its entropy is the target
// of the request's turn (see Entropy), and it lies wholly within the N
// tokens returned (no tail mass), so a client that computes the entropy
// from the returned top logprobs recovers the target exactly. The sampled
// token is the most likely one; the others are placeholder tokens "~a",
// "~b", ... that never occur in the text.

// MaxTopLogprobs is the most top logprobs a request may ask for, as
// vLLM's default --max-logprobs.
const MaxTopLogprobs = 20

// DefaultEntropy is the planted per-token entropy (nats) when
// Config.Entropy sets none: drawn per request from uniform(0.3, 1.5).
var DefaultEntropy = Entropy{Lo: 0.3, Hi: 1.5}

// Entropy is the planted per-token entropy, in nats, of a request's
// logprobs: PerTurn[t] for a chat request's turn t (counted by the
// assistant messages before it; the last value holds for later turns), or
// a value drawn per request, seeded, from uniform(Lo, Hi) when PerTurn is
// empty.
type Entropy struct {
	PerTurn []float64
	Lo, Hi  float64
}

// ParseEntropy reads --logprobs-entropy: a value in nats (1.2), values per
// turn (0.5,1.0,1.5: turn 1, 2, 3 and later) or uniform:LO:HI drawn per
// request. An entropy above ln N cannot be planted in N top logprobs: it is
// ln N then (N = 20: 3.0 nats).
func ParseEntropy(s string) (Entropy, error) {
	t := strings.TrimSpace(s)
	bad := fmt.Errorf("logprobs entropy %q: give nats ≥ 0: a value (1.2), one per turn (0.5,1.0,1.5) or uniform:LO:HI", s)
	num := func(v string) (float64, bool) {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return f, err == nil && f >= 0 && f <= 100 && !math.IsNaN(f)
	}
	if rest, ok := strings.CutPrefix(t, "uniform:"); ok {
		lo, hi, ok := strings.Cut(rest, ":")
		a, okA := num(lo)
		b, okB := num(hi)
		if !ok || !okA || !okB || a > b {
			return Entropy{}, bad
		}
		return Entropy{Lo: a, Hi: b}, nil
	}
	var e Entropy
	for _, v := range strings.Split(t, ",") {
		f, ok := num(v)
		if !ok {
			return Entropy{}, bad
		}
		e.PerTurn = append(e.PerTurn, f)
	}
	return e, nil
}

// String is the form ParseEntropy reads.
func (e Entropy) String() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	if len(e.PerTurn) == 0 {
		return "uniform:" + f(e.Lo) + ":" + f(e.Hi)
	}
	parts := make([]string, len(e.PerTurn))
	for i, v := range e.PerTurn {
		parts[i] = f(v)
	}
	return strings.Join(parts, ",")
}

// target is the entropy planted for turn (from 0) of request seq.
func (e Entropy) target(seed int64, seq uint64, turn int) float64 {
	if len(e.PerTurn) > 0 {
		return e.PerTurn[min(turn, len(e.PerTurn)-1)]
	}
	u := unitFloat(mix64(uint64(seed) ^ 0x656e74726f707900 ^ mix64(seq))) // "entropy"
	return e.Lo + (e.Hi-e.Lo)*u
}

// plantedLogprobs are the log probabilities of the top n tokens whose
// distribution has entropy h (nats), most likely first: p_i ∝ exp(−β·i),
// β found by bisection (h ≥ ln n gives the uniform distribution).
func plantedLogprobs(n int, h float64) []float64 {
	lps := make([]float64, n)
	if n <= 1 {
		return lps // one token: certain
	}
	entropy := func(beta float64) float64 {
		var z, s float64
		for i := range n {
			w := math.Exp(-beta * float64(i))
			z += w
			s += w * beta * float64(i)
		}
		return s/z + math.Log(z)
	}
	beta := 0.0
	if h < math.Log(float64(n)) {
		lo, hi := 0.0, 200.0
		for range 200 {
			mid := (lo + hi) / 2
			if entropy(mid) > h {
				lo = mid
			} else {
				hi = mid
			}
		}
		beta = (lo + hi) / 2
	}
	var z float64
	for i := range n {
		z += math.Exp(-beta * float64(i))
	}
	lz := math.Log(z)
	for i := range lps {
		lps[i] = -beta*float64(i) - lz
	}
	return lps
}

// logprobPlan is a request's logprobs, preformatted: every token gets the
// same planted distribution, so only the sampled token's text changes from
// one to the next.
type logprobPlan struct {
	n       int     // top logprobs per token (0: the sampled token's only)
	entropy float64 // planted, nats
	lp0     []byte  // the sampled token's logprob, formatted
	alts    []byte  // the other tokens of the top list, formatted for the endpoint
}

// altToken is the i-th placeholder token (i ≥ 1) of a top list.
func altToken(i int) string {
	if i <= 26 {
		return "~" + string(rune('a'+i-1))
	}
	return "~" + strconv.Itoa(i)
}

// newLogprobPlan prepares the logprobs of a request of endpoint ep asking
// for n top logprobs, with entropy h.
func newLogprobPlan(ep endpoint, n int, h float64) *logprobPlan {
	lps := plantedLogprobs(max(n, 1), h)
	p := &logprobPlan{n: n, entropy: h, lp0: strconv.AppendFloat(nil, lps[0], 'g', -1, 64)}
	for i := 1; i < n; i++ {
		lp := strconv.AppendFloat(nil, lps[i], 'g', -1, 64)
		if ep == epChat {
			p.alts = append(p.alts, `,{"token":"`+altToken(i)+`","logprob":`...)
			p.alts = append(p.alts, lp...)
			p.alts = append(p.alts, `,"bytes":null}`...)
		} else {
			p.alts = append(p.alts, `,"`+altToken(i)+`":`...)
			p.alts = append(p.alts, lp...)
		}
	}
	return p
}

// appendChatEntry appends a chat token's logprobs entry ("content" item).
func (p *logprobPlan) appendChatEntry(b, word []byte) []byte {
	b = append(b, `{"token":"`...)
	b = append(b, word...)
	b = append(b, `","logprob":`...)
	b = append(b, p.lp0...)
	b = append(b, `,"bytes":null,"top_logprobs":[`...)
	if p.n > 0 {
		b = append(b, `{"token":"`...)
		b = append(b, word...)
		b = append(b, `","logprob":`...)
		b = append(b, p.lp0...)
		b = append(b, `,"bytes":null}`...)
		b = append(b, p.alts...)
	}
	return append(b, "]}"...)
}

// appendChat appends a chat chunk's logprobs object for one token.
func (p *logprobPlan) appendChat(b, word []byte) []byte {
	b = append(b, `{"content":[`...)
	b = p.appendChatEntry(b, word)
	return append(b, "]}"...)
}

// appendCompletion appends a completions chunk's logprobs object for one
// token (no text_offset: the text is in the chunk).
func (p *logprobPlan) appendCompletion(b, word []byte) []byte {
	b = append(b, `{"tokens":["`...)
	b = append(b, word...)
	b = append(b, `"],"token_logprobs":[`...)
	b = append(b, p.lp0...)
	b = append(b, `],"top_logprobs":[{"`...)
	b = append(b, word...)
	b = append(b, `":`...)
	b = append(b, p.lp0...)
	b = append(b, p.alts...)
	return append(b, "}]}"...)
}

// wholeJSON is the logprobs object of a whole (not streamed) response of
// the n tokens words gives.
func (p *logprobPlan) wholeJSON(ep endpoint, n int, word func(k int) []byte) []byte {
	var b []byte
	if ep == epChat {
		b = append(b, `{"content":[`...)
		for k := range n {
			if k > 0 {
				b = append(b, ',')
			}
			b = p.appendChatEntry(b, word(k))
		}
		return append(b, `],"refusal":null}`...)
	}
	b = append(b, `{"tokens":[`...)
	for k := range n {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, word(k)...)
		b = append(b, '"')
	}
	b = append(b, `],"token_logprobs":[`...)
	for k := range n {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, p.lp0...)
	}
	b = append(b, `],"top_logprobs":[`...)
	for k := range n {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"`...)
		b = append(b, word(k)...)
		b = append(b, `":`...)
		b = append(b, p.lp0...)
		b = append(b, p.alts...)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// readLogprobs reads what a request asks of logprobs, with vLLM's checks
// and messages: chat's logprobs is a bool and its top_logprobs needs it;
// completions' logprobs is the number of top logprobs; at most
// MaxTopLogprobs.
func (r *genRequest) readLogprobs(w *wireRequest) *apiError {
	r.topLogprobs = -1
	raw := strings.TrimSpace(string(w.Logprobs))
	if r.ep == epChat {
		on := raw == "true"
		if raw != "" && raw != "null" && raw != "true" && raw != "false" {
			return badRequest("logprobs", "logprobs must be a boolean.")
		}
		if w.TopLogprobs != nil && *w.TopLogprobs != 0 && !on {
			return badRequest("top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true.")
		}
		if !on {
			return nil
		}
		n := int64(0)
		if w.TopLogprobs != nil {
			n = *w.TopLogprobs
		}
		return r.setTop(n, "top_logprobs")
	}
	if raw == "" || raw == "null" {
		return nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return badRequest("logprobs", "`logprobs` must be a positive value.")
	}
	return r.setTop(n, "logprobs")
}

func (r *genRequest) setTop(n int64, param string) *apiError {
	switch {
	case n < 0:
		return badRequest(param, "`%s` must be a positive value.", param)
	case n > MaxTopLogprobs:
		return badRequest(param, "Requested sample logprobs of %d, which is greater than max allowed: %d", n, MaxTopLogprobs)
	}
	r.topLogprobs = int(n)
	return nil
}
