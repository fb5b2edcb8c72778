package cluster

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spate-dev/spate/internal/longtest"
	"github.com/spate-dev/spate/internal/workload/logbuild/textembed"
)

// topics are the planted topics of the synthetic log: each query draws
// most of its words from one topic's vocabulary.
var topics = [][]string{
	{"refund", "money", "charged", "twice", "credit", "card", "payment", "invoice", "billing", "receipt", "overcharged", "subscription", "cancel", "renewal", "price"},
	{"password", "login", "reset", "locked", "account", "two-factor", "code", "email", "verification", "sign", "username", "authenticator", "session", "expired", "link"},
	{"shipping", "delivery", "package", "tracking", "courier", "arrived", "late", "address", "parcel", "shipped", "warehouse", "lost", "damaged", "box", "carrier"},
	{"api", "error", "timeout", "endpoint", "request", "rate", "limit", "token", "sdk", "latency", "500", "webhook", "json", "response", "integration"},
	{"recipe", "dinner", "vegetarian", "pasta", "sauce", "oven", "bake", "ingredients", "chicken", "spicy", "soup", "dessert", "gluten", "salad", "cook"},
	{"flight", "hotel", "booking", "trip", "airport", "luggage", "visa", "passport", "itinerary", "beach", "train", "reservation", "travel", "seat", "check-in"},
}

// filler words are shared by every topic.
var filler = []string{"help", "question", "today", "need", "issue", "problem", "quick", "urgent", "again", "still", "know", "tell", "anyone", "thing", "work", "best", "way", "time", "hello", "team"}

var glue = []string{"the", "a", "my", "is", "and", "to", "how", "can", "i", "for", "with", "it", "what", "why"}

// plantedLog returns perTopic queries per topic, shuffled, and the topic
// of each.
func plantedLog(perTopic int, seed uint64) ([]string, []int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var texts []string
	var truth []int
	for t, vocab := range topics {
		for range perTopic {
			var w []string
			for range 3 + rng.IntN(3) {
				w = append(w, vocab[rng.IntN(len(vocab))])
			}
			for range 2 + rng.IntN(3) {
				w = append(w, filler[rng.IntN(len(filler))])
			}
			for range 2 + rng.IntN(4) {
				w = append(w, glue[rng.IntN(len(glue))])
			}
			rng.Shuffle(len(w), func(a, b int) { w[a], w[b] = w[b], w[a] })
			texts = append(texts, strings.Join(w, " "))
			truth = append(truth, t)
		}
	}
	rng.Shuffle(len(texts), func(a, b int) {
		texts[a], texts[b] = texts[b], texts[a]
		truth[a], truth[b] = truth[b], truth[a]
	})
	return texts, truth
}

// purity is the share of queries that belong to the planted topic most
// common in their cluster.
func purity(r *Result, truth []int) float64 {
	right, total := 0, 0
	for _, c := range r.Clusters {
		count := map[int]int{}
		best := 0
		for _, i := range c.Members {
			count[truth[i]]++
			best = max(best, count[truth[i]])
		}
		right += best
		total += len(c.Members)
	}
	return float64(right) / float64(total)
}

func embedLocal(t *testing.T, texts []string) ([]textembed.Vector, *textembed.Model) {
	t.Helper()
	loc := textembed.Local{}
	vecs, err := loc.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	return vecs, loc.Fit(texts)
}

func TestPurityTable(t *testing.T) {
	// A known clustering: purity counts the majority topic of each cluster.
	r := &Result{Clusters: []Cluster{{Members: []int{0, 1, 2}}, {Members: []int{3, 4}}}}
	if got := purity(r, []int{0, 0, 1, 1, 1}); got != 0.8 {
		t.Fatalf("purity = %v, want 0.8", got)
	}
}

// TestPlantedTopicsRecovered is issue 5's Done means: 6 planted topics ×
// 200 queries with shared filler words are recovered with purity ≥ 0.8 by
// the local embedding, with k given and with k chosen by silhouette. The
// default suite clusters 50 queries a topic (purity 1.000 and k = 6 at 50,
// 100 and 200 when this was written; the clustering's cost grows with the
// square of the log: 0.4 s against 4 s under -race); -tags integration
// the full 200.
func TestPlantedTopicsRecovered(t *testing.T) {
	for _, tt := range []struct {
		name     string
		perTopic int
		k        int
	}{{"50/k=6", 50, 6}, {"50/k=auto", 50, 0}, {"200/k=6", 200, 6}, {"200/k=auto", 200, 0}} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.perTopic > 50 {
				longtest.Skip(t)
			}
			texts, truth := plantedLog(tt.perTopic, 1)
			vecs, terms := embedLocal(t, texts)
			r, err := Build(context.Background(), texts, vecs, terms, Options{K: tt.k, KMax: 12, Seed: 42})
			if err != nil {
				t.Fatal(err)
			}
			p := purity(r, truth)
			t.Logf("k = %d (%s), purity %.3f, scores %+v", r.K, r.KChosenBy, p, r.Scores)
			if p < 0.8 {
				t.Errorf("purity %.3f, want ≥ 0.8", p)
			}
			if tt.k == 0 && (r.K < 5 || r.K > 7) {
				t.Errorf("k = auto chose %d, want the planted 6 ± 1", r.K)
			}
			// Each cluster's label is a term of its majority topic's
			// vocabulary ("two-factor" gives the terms "two" and
			// "factor").
			for _, c := range r.Clusters {
				count := map[int]int{}
				maj := 0
				for _, i := range c.Members {
					count[truth[i]]++
					if count[truth[i]] > count[maj] {
						maj = truth[i]
					}
				}
				if !contains(textembed.Terms(strings.Join(topics[maj], " "), false), strings.SplitN(c.Label, "-", 2)[1]) {
					t.Errorf("cluster %s (top terms %v) is mostly topic %d", c.Label, c.TopTerms, maj)
				}
			}
		})
	}
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// TestPurityNeedsTheEmbedding is the control of TestPlantedTopicsRecovered:
// with random vectors in place of the embedding, the same log and k give a
// purity near chance (1/6), so the purity figure does measure the
// embedding and clustering. The vectors have 8 dimensions: k-means on
// random points never converges, so it runs all its iterations, and 32
// dimensions over 100 queries a topic took 5 s under -race for the same
// answer (purity 0.233 then, 0.230 now).
func TestPurityNeedsTheEmbedding(t *testing.T) {
	texts, truth := plantedLog(50, 1)
	rng := rand.New(rand.NewPCG(2, 3))
	vecs := make([]textembed.Vector, len(texts))
	for i := range vecs {
		v := make([]float64, 8)
		n := 0.0
		for k := range v {
			v[k] = rng.NormFloat64()
			n += v[k] * v[k]
		}
		for k := range v {
			v[k] /= math.Sqrt(n)
		}
		vecs[i] = textembed.Dense(v)
	}
	r, err := Build(context.Background(), texts, vecs, textembed.Fit(texts, false), Options{K: 6, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	if p := purity(r, truth); p > 0.4 {
		t.Errorf("purity %.3f with random vectors, want near 1/6 (≤ 0.4)", p)
	} else {
		t.Logf("purity with random vectors: %.3f", p)
	}
}

func TestBuildHonoursCancel(t *testing.T) {
	texts, _ := plantedLog(20, 1)
	vecs, terms := embedLocal(t, texts)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, texts, vecs, terms, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}
