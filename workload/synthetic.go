package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Lengths is a token-length distribution: normal with mean Mean and
// standard deviation SD, rounded and clipped to at least Min.
type Lengths struct {
	Mean float64
	SD   float64
	Min  int
}

// ParseLengths parses "MEAN" or "MEAN:SD" as given to --input-tokens.
func ParseLengths(s string) (Lengths, error) {
	mean, sd, hasSD := strings.Cut(s, ":")
	m, err := strconv.ParseFloat(strings.TrimSpace(mean), 64)
	if err != nil || m < 0 || math.IsInf(m, 0) || math.IsNaN(m) {
		return Lengths{}, fmt.Errorf("%q: want MEAN or MEAN:SD in tokens, e.g. 512 or 512:64", s)
	}
	l := Lengths{Mean: m, Min: 1}
	if hasSD {
		v, err := strconv.ParseFloat(strings.TrimSpace(sd), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return Lengths{}, fmt.Errorf("%q: standard deviation must be a number >= 0", s)
		}
		l.SD = v
	}
	return l, nil
}

// Sample draws a length with r.
func (l Lengths) Sample(r *rand.Rand) int {
	v := l.Mean
	if l.SD > 0 {
		v += r.NormFloat64() * l.SD
	}
	n := int(math.Round(v))
	if n < l.Min {
		n = l.Min
	}
	return n
}

// Synthetic makes prompts of a token-length distribution out of words that
// are each exactly one cl100k token, so a prompt of n words is n tokens (the
// server's chat template adds its own few). Words are drawn at random per
// request, so requests share no prefix by accident.
type Synthetic struct {
	Input  Lengths
	Output Lengths // requested output tokens (max_tokens); Mean 0 means unset
	Seed   uint64
}

var _ Source = Synthetic{}

// Request implements Source.
func (s Synthetic) Request(n uint64) (*Request, error) {
	r := rand.New(rand.NewPCG(s.Seed, n))
	in := s.Input.Sample(r)
	req := &Request{Prompt: Words(r, in), InputTokens: in}
	if s.Output.Mean > 0 {
		req.MaxTokens = s.Output.Sample(r)
	}
	return req, nil
}

// Digest implements Source.
func (s Synthetic) Digest() string {
	return digest([]byte(fmt.Sprintf("synthetic/v1 in=%g:%g out=%g:%g seed=%d",
		s.Input.Mean, s.Input.SD, s.Output.Mean, s.Output.SD, s.Seed)))
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
