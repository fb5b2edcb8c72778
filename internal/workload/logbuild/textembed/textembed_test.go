package textembed

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"
)

func TestWordsAndTerms(t *testing.T) {
	tests := []struct {
		in      string
		bigrams bool
		words   []string
		terms   []string
	}{
		{in: "How do I get a REFUND for my order #123?", words: []string{"how", "do", "i", "get", "a", "refund", "for", "my", "order", "123"}, terms: []string{"refund", "order", "123"}},
		{in: "Don't charge me twice", bigrams: true, words: []string{"dont", "charge", "me", "twice"}, terms: []string{"charge", "twice", "charge twice"}},
		{in: "Café crème — naïve", words: []string{"café", "crème", "naïve"}, terms: []string{"café", "crème", "naïve"}},
		{in: "退款 请求", words: []string{"退款", "请求"}, terms: []string{"退款", "请求"}},
		{in: "x y the and", words: []string{"x", "y", "the", "and"}, terms: nil},
		{in: "", words: nil, terms: nil},
		{in: "reset password reset", bigrams: true, words: []string{"reset", "password", "reset"}, terms: []string{"reset", "password", "reset", "reset password", "password reset"}},
	}
	for _, tt := range tests {
		if got := Words(tt.in); !reflect.DeepEqual(got, tt.words) {
			t.Errorf("Words(%q) = %q, want %q", tt.in, got, tt.words)
		}
		if got := Terms(tt.in, tt.bigrams); !reflect.DeepEqual(got, tt.terms) {
			t.Errorf("Terms(%q, %v) = %q, want %q", tt.in, tt.bigrams, got, tt.terms)
		}
	}
}

// TestTFIDFWeights checks the weights against figures computed by hand.
func TestTFIDFWeights(t *testing.T) {
	texts := []string{"refund refund order", "order shipping", "shipping late"}
	m := Fit(texts, false)
	// n = 3; df(refund)=1, df(order)=2, df(shipping)=2, df(late)=1.
	idf1, idf2 := math.Log(4.0/2)+1, math.Log(4.0/3)+1
	if got := m.IDF("refund"); math.Abs(got-idf1) > 1e-12 {
		t.Errorf("idf(refund) = %v, want %v", got, idf1)
	}
	if got := m.IDF("order"); math.Abs(got-idf2) > 1e-12 {
		t.Errorf("idf(order) = %v, want %v", got, idf2)
	}
	if got, want := m.IDF("never"), math.Log(4.0/1)+1; math.Abs(got-want) > 1e-12 {
		t.Errorf("idf(unseen) = %v, want %v", got, want)
	}
	w := m.Weights(texts[0])
	a, b := (1+math.Log(2))*idf1, idf2 // refund twice, order once
	n := math.Hypot(a, b)
	if math.Abs(w["refund"]-a/n) > 1e-12 || math.Abs(w["order"]-b/n) > 1e-12 || len(w) != 2 {
		t.Errorf("weights = %v, want refund %v order %v", w, a/n, b/n)
	}
	// With no collision, the hashed vector holds the same values.
	v := m.Vector(texts[0], 1<<20)
	if v.Len() != 2 || math.Abs(v.Norm2()-1) > 1e-12 {
		t.Fatalf("vector %+v: want 2 entries of unit norm", v)
	}
	got := []float64{math.Abs(v.Val[0]), math.Abs(v.Val[1])}
	if !(math.Abs(got[0]-a/n) < 1e-12 && math.Abs(got[1]-b/n) < 1e-12) && !(math.Abs(got[1]-a/n) < 1e-12 && math.Abs(got[0]-b/n) < 1e-12) {
		t.Errorf("vector values %v, want ±%v and ±%v", v.Val, a/n, b/n)
	}
	if e := m.Vector("the and of", 64); e.Len() != 0 {
		t.Errorf("a text of stop words embeds to %+v, want empty", e)
	}
}

func TestLocalDeterministicAndTopical(t *testing.T) {
	texts := []string{
		"I want a refund for my broken order",
		"refund my order please, it arrived broken",
		"how do I reset my password",
		"password reset link does not work",
	}
	l := Local{Bigrams: true}
	a, err := l.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := l.Embed(context.Background(), texts)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two embeddings of the same texts differ")
	}
	for i, v := range a {
		if math.Abs(v.Norm2()-1) > 1e-9 {
			t.Errorf("vector %d has norm² %v", i, v.Norm2())
		}
		for k := 1; k < v.Len(); k++ {
			if v.Idx[k] <= v.Idx[k-1] || v.Idx[k] >= DefaultDim {
				t.Fatalf("vector %d indices not sorted in range: %v", i, v.Idx)
			}
		}
	}
	same1, same2 := a[0].Dot(a[1]), a[2].Dot(a[3])
	for _, cross := range []float64{a[0].Dot(a[2]), a[0].Dot(a[3]), a[1].Dot(a[2]), a[1].Dot(a[3])} {
		if cross >= same1 || cross >= same2 {
			t.Errorf("cross-topic cosine %.3f not below same-topic %.3f, %.3f", cross, same1, same2)
		}
	}
	if same1 < 0.3 || same2 < 0.3 {
		t.Errorf("same-topic cosines %.3f %.3f, want ≥ 0.3", same1, same2)
	}
}

func TestVectorOps(t *testing.T) {
	v := Vector{Idx: []int32{1, 4, 7}, Val: []float64{1, 2, 3}}
	w := Vector{Idx: []int32{0, 4, 7, 9}, Val: []float64{5, 10, -1, 2}}
	if got := v.Dot(w); got != 17 {
		t.Errorf("Dot = %v, want 17", got)
	}
	d := make([]float64, 10)
	w.AddTo(d, 2)
	if got := v.DotDense(d); got != 34 {
		t.Errorf("DotDense = %v, want 34", got)
	}
	if got := Dense([]float64{3, 0, 4}); got.Len() != 3 || got.Norm2() != 25 {
		t.Errorf("Dense = %+v", got)
	}
}

// embeddingsServer answers /v1/embeddings with vector [len(text), 1, i]
// for input i of a request, and counts requests and checks the key.
func embeddingsServer(t *testing.T, key string, requests *atomic.Int32) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"error":{"message":"no"}}`, http.StatusUnauthorized)
			return
		}
		requests.Add(1)
		var req embeddingsRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "emb" || req.EncodingFormat != "float" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		type datum struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		}
		var resp struct {
			Data []datum `json:"data"`
		}
		for i := len(req.Input) - 1; i >= 0; i-- { // out of order on purpose
			resp.Data = append(resp.Data, datum{i, []float64{float64(utf8.RuneCountInString(req.Input[i])), 1, float64(i)}})
		}
		json.NewEncoder(w).Encode(resp)
	}))
}

func TestRemoteBatchesAndOrders(t *testing.T) {
	var n atomic.Int32
	srv := embeddingsServer(t, "sk-secret", &n)
	defer srv.Close()
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	r := Remote{BaseURL: srv.URL + "/v1/", Model: "emb", APIKey: "sk-secret", Batch: 2}
	vs, err := r.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 3 {
		t.Errorf("%d requests for 5 texts in batches of 2, want 3", n.Load())
	}
	for i, v := range vs {
		want := []float64{float64(i + 1), 1, float64(i % 2)}
		norm := math.Sqrt(want[0]*want[0] + want[1]*want[1] + want[2]*want[2])
		for k := range want {
			if math.Abs(v.Val[k]-want[k]/norm) > 1e-12 {
				t.Fatalf("vector %d = %v, want %v normalised", i, v.Val, want)
			}
		}
	}
	bad := Remote{BaseURL: srv.URL + "/v1", Model: "emb", APIKey: "sk-wrong"}
	_, err = bad.Embed(context.Background(), texts)
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || strings.Contains(err.Error(), "sk-wrong") {
		t.Errorf("wrong key: error %v, want HTTP 401 without the key", err)
	}
	if strings.Contains(r.Name(), "sk-secret") {
		t.Errorf("Name %q shows the key", r.Name())
	}
}

// FuzzTerms checks that terms are non-empty, lower-cased and never stop words.
func FuzzTerms(f *testing.F) {
	f.Add("How do I get a REFUND?", true)
	f.Add("don't 退款 café's", false)
	f.Fuzz(func(t *testing.T, s string, bigrams bool) {
		for _, term := range Terms(s, bigrams) {
			if term == "" || strings.ToLower(term) != term && !strings.Contains(term, " ") || isStopWord(term) {
				t.Fatalf("bad term %q from %q", term, s)
			}
		}
		m := Fit([]string{s}, bigrams)
		v := m.Vector(s, 16)
		if v.Len() > 0 && math.Abs(v.Norm2()-1) > 1e-9 {
			t.Fatalf("norm² %v", v.Norm2())
		}
	})
}
