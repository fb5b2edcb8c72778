package textembed

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
)

// DefaultDim is the default number of hashed TF-IDF dimensions.
const DefaultDim = 1024

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
}

var _ Embedder = Local{}

// Name implements Embedder.
func (l Local) Name() string {
	s := fmt.Sprintf("local hashed TF-IDF (%d dims", l.dim())
	if l.Bigrams {
		s += ", bigrams"
	}
	return s + ")"
}

func (l Local) dim() int {
	if l.Dim <= 0 {
		return DefaultDim
	}
	return l.Dim
}

// Embed implements Embedder: it fits the IDF on texts and embeds them.
func (l Local) Embed(ctx context.Context, texts []string) ([]Vector, error) {
	m := Fit(texts, l.Bigrams)
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
}

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
// idf, L2-normalised over the text's terms (before hashing).
func (m *Model) Weights(text string) map[string]float64 {
	tf := map[string]int{}
	for _, term := range Terms(text, m.bigrams) {
		tf[term]++
	}
	w := make(map[string]float64, len(tf))
	norm := 0.0
	for _, term := range sortedKeys(tf) { // a fixed order: same sums, same bits
		x := (1 + math.Log(float64(tf[term]))) * m.IDF(term)
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
