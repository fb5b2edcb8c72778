package workload

import (
	"fmt"
	"github.com/spate-dev/spate/experiment"
	"math/rand/v2"
	"strings"
)

// Synthetic makes prompts of a token-length distribution out of words that
// are each exactly one cl100k token, so a prompt of n words is n tokens (the
// server's chat template adds its own few). Words are drawn at random per
// request, so requests share no prefix by accident.
type Synthetic struct {
	Input  Lengths
	Output Lengths // requested output tokens (max_tokens); Mean 0 means unset
	Seed   uint64
	// Prefix, when set, starts a share of prompts with a shared prefix.
	Prefix *experiment.SharedPrefix
	// Vocab, when set, makes prompts of its words in its tokenizer's
	// counts (--tokenizer server); nil: OneTokenWords.
	Vocab *Vocab
}

var _ Source = Synthetic{}

// Request implements Source.
func (s Synthetic) Request(n uint64) (*Request, error) {
	r := rand.New(rand.NewPCG(s.Seed, n))
	in := s.Input.Sample(r)
	t := synthText(r, in, s.Prefix, s.Seed, s.Vocab)
	req := &Request{Prompt: t.text, InputTokens: t.tokens}
	if s.Prefix != nil {
		req.Labels = []Label{{Key: "prefix", Value: t.group}}
	}
	if s.Output.Mean > 0 {
		req.MaxTokens = s.Output.Sample(r)
	}
	return req, nil
}

// Digest implements Source.
func (s Synthetic) Digest() string {
	key := fmt.Sprintf("synthetic/v1 in=%s out=%s seed=%d", s.Input.key(), s.Output.key(), s.Seed)
	if p := s.Prefix; p != nil {
		key += fmt.Sprintf(" prefix=%d:%d:%g", p.Groups, p.Tokens, p.Ratio)
	}
	key += s.Vocab.key()
	return digest([]byte(key))
}

// synth is synthetic text and the shared-prefix group it starts with
// ("none" when it has no shared prefix).
type synth struct {
	text, group string
	tokens      int
}

// synthText makes n tokens of text; with a shared prefix, a Ratio share of
// texts longer than the prefix start with one of its groups' prefixes.
func synthText(r *rand.Rand, n int, p *experiment.SharedPrefix, seed uint64, v *Vocab) synth {
	if p == nil || n <= p.Tokens || r.Float64() >= p.Ratio {
		t, k := v.Text(r, n)
		return synth{t, "none", k}
	}
	g := r.IntN(p.Groups)
	pre, pk := v.Text(newRand(seed^0xF1E2D3C4B5A69788, uint64(g)), p.Tokens)
	t, k := v.More(r, n-p.Tokens)
	return synth{pre + t, fmt.Sprint("g", g), pk + k}
}

// PrefixText is shared prefix number g of a workload seeded with seed:
// tokens one-token words, the same for every request of the group.
func PrefixText(seed uint64, g, tokens int) string {
	return Words(newRand(seed^0xF1E2D3C4B5A69788, uint64(g)), tokens)
}

// Words returns n words drawn with r, each one cl100k token with its
// leading space.
func Words(r *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(n * 7)
	for i := 0; i < n; i++ {
		b.WriteByte(' ')
		b.WriteString(OneTokenWords[r.IntN(len(OneTokenWords))])
	}
	return b.String()
}

// OneTokenWords are common English words that are each a single cl100k_base
// token when preceded by a space (checked by a test).
var OneTokenWords = strings.Fields(`time year people way day man thing woman life child world school state
family student group country problem hand part place case week company system program question work
government number night point home water room mother area money story fact month lot right study book
eye job word business issue side kind head house service friend father power hour game line end member
law car city community name president team minute idea kid body information back parent face others
level office door health person art war history party result change morning reason research girl guy
moment air teacher force education foot boy age policy process music market sense nation plan college
interest death experience effect class control care field development role effort rate heart drug show
leader light voice wife police mind price report decision son view relationship town road arm difference
value building action model season society tax director position player record paper space ground form
event official matter center couple site project activity star table need court oil situation cost
industry figure street image phone data picture practice piece land product doctor wall patient worker
news test movie north love support technology step baby computer type attention film tree source
organization hair window evidence population truth song network rock order energy river stone cloud
rain snow sun moon sea ocean wind fire green blue red black white small large good new old great high
little big long young early important public bad same able`)

func newRand(seed, n uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, n)) }

// CheckVocab reports whether every word synthetic prompts are made of is a
// single token of tok, so that a prompt of n words is n tokens of it.
func CheckVocab(tok Counter, name string) error {
	var bad []string
	for _, w := range OneTokenWords {
		if tok.Count(" "+w) != 1 {
			bad = append(bad, w)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("synthetic prompts would not have exact lengths in tokenizer %s: %d of its words are more than one token (%s); use a dataset, or the cl100k_base, o200k_base or llama3 tokenizer", name, len(bad), strings.Join(bad[:min(len(bad), 5)], ", "))
	}
	return nil
}
