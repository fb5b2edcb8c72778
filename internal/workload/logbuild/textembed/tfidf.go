package textembed

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
)

// DefaultDim is the default number of hashed TF-IDF dimensions.
const DefaultDim = 1 << 14

// Local is the built-in offline embedding: hashed TF-IDF. Each text's
// terms (see Terms) are weighted by (1 + ln tf) · idf, with idf =
// ln((1 + n) / (1 + df)) + 1 computed over the texts being embedded (the
// log itself), then hashed into Dim buckets with a sign taken from the
// hash (so that collisions cancel out rather than add up) and
// L2-normalised. The same texts always give the same vectors.
type Local struct {
	// Dim is the number of hash buckets (0: DefaultDim).
	Dim int
	// Bigrams adds pairs of consecutive words as terms.
	Bigrams bool
	// KeepBoilerplate keeps every term's TF-IDF weight as it is, instead of
	// down-weighting the boilerplate learnt from the texts (see
	// Boilerplate).
	KeepBoilerplate bool
}

var _ Embedder = Local{}

// Name implements Embedder.
func (l Local) Name() string {
	s := fmt.Sprintf("local hashed TF-IDF (%d dims", l.dim())
	if l.Bigrams {
		s += ", bigrams"
	}
	if l.KeepBoilerplate {
		s += ", boilerplate kept"
	}
	return s + ")"
}

func (l Local) dim() int {
	if l.Dim <= 0 {
		return DefaultDim
	}
	return l.Dim
}

// MinBoilerplateLog is the least number of texts boilerplate is learnt
// from: in fewer, words shared by every text are as likely a topic.
const MinBoilerplateLog = 30

// Fit fits the embedding's model on texts: the IDF of their terms and,
// unless KeepBoilerplate or there are fewer than MinBoilerplateLog texts,
// the weights of their boilerplate.
func (l Local) Fit(texts []string) *Model {
	m := Fit(texts, l.Bigrams)
	if !l.KeepBoilerplate && len(texts) >= MinBoilerplateLog {
		m.LearnBoilerplate(texts)
	}
	return m
}

// Embed implements Embedder: it fits the model on texts (Fit) and embeds
// them.
func (l Local) Embed(ctx context.Context, texts []string) ([]Vector, error) {
	m := l.Fit(texts)
	out := make([]Vector, len(texts))
	for i, t := range texts {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("embedding texts: %w", ctx.Err())
		}
		out[i] = m.Vector(t, l.dim())
	}
	return out, nil
}

// Model holds the document frequencies of terms over a corpus.
type Model struct {
	bigrams bool
	n       int
	df      map[string]int
	// boiler holds the terms judged by LearnBoilerplate and their weights.
	boiler []TermWeight
	mult   map[string]float64
}

// LearnBoilerplate learns the boilerplate of texts (see Boilerplate): from
// then on Weights multiplies each term's weight by the weight learnt.
func (m *Model) LearnBoilerplate(texts []string) {
	m.mult = nil
	lines := make([]map[string]float64, len(texts))
	for i, t := range texts {
		lines[i] = m.Weights(t)
	}
	m.boiler = learnBoilerplate(lines)
	m.mult = make(map[string]float64, len(m.boiler))
	for _, tw := range m.boiler {
		m.mult[tw.Term] = tw.Weight
	}
}

// Boilerplate returns the terms LearnBoilerplate judged, least topical
// first (nil when it did not run).
func (m *Model) Boilerplate() []TermWeight { return m.boiler }

// Fit counts, for each term, the number of texts it occurs in.
func Fit(texts []string, bigrams bool) *Model {
	m := &Model{bigrams: bigrams, n: len(texts), df: map[string]int{}}
	seen := map[string]bool{}
	for _, t := range texts {
		clear(seen)
		for _, term := range Terms(t, bigrams) {
			if !seen[term] {
				seen[term] = true
				m.df[term]++
			}
		}
	}
	return m
}

// IDF is the smoothed inverse document frequency of a term:
// ln((1 + n) / (1 + df)) + 1.
func (m *Model) IDF(term string) float64 {
	return math.Log(float64(1+m.n)/float64(1+m.df[term])) + 1
}

// Weights returns the TF-IDF weight of each term of text, (1 + ln tf) ·
// idf, times its boilerplate weight when learnt (LearnBoilerplate),
// L2-normalised over the text's terms (before hashing).
func (m *Model) Weights(text string) map[string]float64 {
	tf := map[string]int{}
	for _, term := range Terms(text, m.bigrams) {
		tf[term]++
	}
	w := make(map[string]float64, len(tf))
	norm := 0.0
	for _, term := range sortedKeys(tf) { // a fixed order: same sums, same bits
		x := (1 + math.Log(float64(tf[term]))) * m.IDF(term)
		if b, ok := m.mult[term]; ok {
			x *= b
		}
		w[term] = x
		norm += x * x
	}
	if norm > 0 {
		norm = math.Sqrt(norm)
		for term := range w {
			w[term] /= norm
		}
	}
	return w
}

// Vector returns the hashed TF-IDF embedding of text in dim dimensions,
// L2-normalised (empty when text has no terms).
func (m *Model) Vector(text string, dim int) Vector {
	acc := map[int32]float64{}
	w := m.Weights(text)
	for _, term := range sortedKeys(w) {
		i, sign := bucket(term, dim)
		acc[i] += sign * w[term]
	}
	return normalize(fromMap(acc))
}

// sortedKeys returns the keys of m in increasing order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// bucket hashes a term (FNV-1a, 64 bits) to a dimension below dim and a
// sign taken from the hash's top bit.
func bucket(term string, dim int) (int32, float64) {
	h := fnv.New64a()
	h.Write([]byte(term))
	s := h.Sum64()
	sign := 1.0
	if s>>63 == 1 {
		sign = -1
	}
	return int32((s & (1<<63 - 1)) % uint64(dim)), sign
}

// ContentShare is the share of text's TF-IDF weight left once its terms
// are weighted by their boilerplate weights: 1 for a text with no
// boilerplate (or when none was learnt), near 0 for a greeting alone. It
// is 0 for a text with no terms.
func (m *Model) ContentShare(text string) float64 {
	tf := map[string]int{}
	for _, term := range Terms(text, m.bigrams) {
		tf[term]++
	}
	all, kept := 0.0, 0.0
	for _, term := range sortedKeys(tf) {
		x := (1 + math.Log(float64(tf[term]))) * m.IDF(term)
		all += x * x
		if b, ok := m.mult[term]; ok {
			x *= b
		}
		kept += x * x
	}
	if all == 0 {
		return 0
	}
	return math.Sqrt(kept / all)
}
