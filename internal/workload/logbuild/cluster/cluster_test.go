package cluster

import (
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/spate-dev/spate/internal/workload/logbuild/querylog"
	"github.com/spate-dev/spate/internal/workload/logbuild/textembed"
)

func unit(x, y float64) textembed.Vector {
	n := math.Hypot(x, y)
	return textembed.Dense([]float64{x / n, y / n})
}

func TestKMeansKnownPoints(t *testing.T) {
	pts := []textembed.Vector{unit(1, 0), unit(0, 1), unit(1, 0.2), unit(0.2, 1)}
	km, err := Run(context.Background(), pts, 2, KMeansOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if km.Assign[0] != km.Assign[2] || km.Assign[1] != km.Assign[3] || km.Assign[0] == km.Assign[1] {
		t.Errorf("assign = %v, want {0,2} and {1,3}", km.Assign)
	}
	// Each centroid bisects its two points' angle, atan(0.2): every point
	// is 1 − cos(atan(0.2)/2) away.
	want := 4 * (1 - math.Cos(math.Atan(0.2)/2))
	if math.Abs(km.Inertia-want) > 1e-12 || !km.Converged {
		t.Errorf("inertia = %v (converged %v), want %v", km.Inertia, km.Converged, want)
	}
	for c, cent := range km.Centroids {
		if n := math.Hypot(cent[0], cent[1]); math.Abs(n-1) > 1e-12 {
			t.Errorf("centroid %d has norm %v, want 1", c, n)
		}
	}
	if _, err := Run(context.Background(), pts[:1], 2, KMeansOptions{}); !errors.Is(err, ErrTooFewPoints) {
		t.Errorf("k > n: error %v, want ErrTooFewPoints", err)
	}
	dup := []textembed.Vector{pts[0], pts[0], pts[0]}
	if _, err := Run(context.Background(), dup, 2, KMeansOptions{}); !errors.Is(err, ErrTooFewPoints) {
		t.Errorf("one distinct point, k = 2: error %v, want ErrTooFewPoints", err)
	}
}

// TestSilhouetteKnownValue checks the silhouette against a hand
// computation: four unit vectors, cosine distances 0.2 within clusters.
func TestSilhouetteKnownValue(t *testing.T) {
	pts := []textembed.Vector{unit(1, 0), unit(0.8, 0.6), unit(0, 1), unit(-0.6, 0.8)}
	D := NewDistances(pts, 0, 1)
	// s = 11/13 for points 1 and 4, 5/7 for points 2 and 3.
	want := (11.0/13 + 5.0/7) / 2
	if got := D.Silhouette([]int{0, 0, 1, 1}, 2); math.Abs(got-want) > 1e-12 {
		t.Errorf("silhouette = %v, want %v", got, want)
	}
	// Its interval: the four coefficients are mean ± d, d = (11/13 − 5/7)/2,
	// so sd = 2d/√3 and the half-width is t(0.975, 3) · sd / √4.
	_, half := D.SilhouetteCI([]int{0, 0, 1, 1}, 2)
	d := (11.0/13 - 5.0/7) / 2
	if want := 3.182446305284263 * d / math.Sqrt(3); math.Abs(half-want) > 1e-9 {
		t.Errorf("silhouette 95%% half-width = %v, want %v", half, want)
	}
	// A singleton counts 0: points 1,2 (s as before but b from {3} only), 3 alone.
	got := D.Silhouette([]int{0, 0, 1, 2}, 3)
	s1 := (1.0 - 0.2) / 1.0 // a = 0.2, b = min(d13 = 1, d14 = 1.6)
	s2 := (0.4 - 0.2) / 0.4 // a = 0.2, b = min(d23 = 0.4, d24 = 1)
	if math.Abs(got-(s1+s2)/4) > 1e-12 {
		t.Errorf("silhouette with singletons = %v, want %v", got, (s1+s2)/4)
	}
	// Sampling keeps at most max points, the same ones for the same seed.
	many := make([]textembed.Vector, 50)
	for i := range many {
		many[i] = unit(1, float64(i))
	}
	a, b := NewDistances(many, 10, 7), NewDistances(many, 10, 7)
	if len(a.Sample) != 10 || !reflect.DeepEqual(a.Sample, b.Sample) {
		t.Errorf("samples %v and %v, want the same 10", a.Sample, b.Sample)
	}
}

func TestSameSeedSameWorkload(t *testing.T) {
	texts, _ := plantedLog(30, 9)
	vecs, terms := embedLocal(t, texts)
	run := func(seed uint64, weighted bool) (*Result, []byte) {
		r, err := Build(context.Background(), texts, vecs, terms, Options{KMax: 8, Samples: 4, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteLines(&b, Lines(r, weighted, seed)); err != nil {
			t.Fatal(err)
		}
		return r, b.Bytes()
	}
	r1, w1 := run(5, false)
	r2, w2 := run(5, false)
	if !reflect.DeepEqual(r1, r2) || !bytes.Equal(w1, w2) {
		t.Fatal("the same seed gave different clusterings or workloads")
	}
	_, w3 := run(6, false)
	if bytes.Equal(w1, w3) {
		t.Error("another seed gave the very same workload file (its order at least should differ)")
	}
	_, v1 := run(5, true)
	_, v2 := run(5, true)
	if !bytes.Equal(v1, v2) {
		t.Error("the same seed gave different weighted workloads")
	}
}

func TestBuildEdgeCases(t *testing.T) {
	tests := []struct {
		name     string
		texts    []string
		opt      Options
		k        int
		by       string
		sizes    []int
		samples  []int
		skipped  int
		warnings []string
		err      string
	}{
		{name: "fewer lines than k", texts: []string{"refund order", "password reset", "parcel late"}, opt: Options{K: 5},
			k: 3, by: "distinct points", sizes: []int{1, 1, 1}, samples: []int{1, 1, 1}, warnings: []string{"k = 5 asked, but the log has only 3 distinct queries"}},
		{name: "duplicate lines", texts: append(repeat("refund my order", 6), repeat("password reset link", 4)...), opt: Options{},
			k: 2, by: "distinct points", sizes: []int{6, 4}, samples: []int{1, 1}, warnings: []string{"only 2 distinct queries"}},
		{name: "stop-word lines left out", texts: []string{"the and of", "refund order money", "refund money back", "password reset login", "password login locked", "to be or not"}, opt: Options{K: 2},
			k: 2, by: "given", sizes: []int{2, 2}, samples: []int{2, 2}, skipped: 2, warnings: []string{"2 of 6 queries are in no cluster (2 with nothing to embed"}},
		{name: "one line", texts: []string{"refund"}, opt: Options{}, k: 1, by: "distinct points", sizes: []int{1}, samples: []int{1}, warnings: []string{"only 1 distinct queries"}},
		{name: "three distinct, auto", texts: []string{"refund money", "refund money card", "password reset"}, opt: Options{KMax: 5},
			k: 2, by: "linkage gap", sizes: []int{2, 1}, samples: []int{2, 1}},
		{name: "samples cap", texts: []string{"refund money a", "refund money b1", "refund money c2", "refund money d3"}, opt: Options{K: 1, Samples: 2},
			k: 1, by: "given", sizes: []int{4}, samples: []int{2}},
		{name: "only stop words", texts: []string{"the", "and of"}, err: "none of the 2 queries"},
		{name: "negative k", texts: []string{"refund"}, opt: Options{K: -1}, err: "k = -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vecs, terms := embedLocal(t, tt.texts)
			r, err := Build(context.Background(), tt.texts, vecs, terms, tt.opt)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var sizes, samples []int
			for _, c := range r.Clusters {
				sizes = append(sizes, c.Size)
				samples = append(samples, len(c.Samples))
			}
			if r.K != tt.k || r.KChosenBy != tt.by || !reflect.DeepEqual(sizes, tt.sizes) || !reflect.DeepEqual(samples, tt.samples) || r.Unclustered.Len() != tt.skipped {
				t.Errorf("k %d by %s, sizes %v, samples %v, skipped %d; want k %d by %s, sizes %v, samples %v, skipped %d",
					r.K, r.KChosenBy, sizes, samples, r.Unclustered.Len(), tt.k, tt.by, tt.sizes, tt.samples, tt.skipped)
			}
			if len(r.Warnings) != len(tt.warnings) {
				t.Fatalf("warnings %q, want %q", r.Warnings, tt.warnings)
			}
			for i, w := range tt.warnings {
				if !strings.Contains(r.Warnings[i], w) {
					t.Errorf("warning %q, want %q", r.Warnings[i], w)
				}
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestLinesEqualAndWeighted(t *testing.T) {
	r := &Result{Clusters: []Cluster{
		{Label: "c1-a", Size: 70, Samples: []string{"a1", "a2", "a3"}},
		{Label: "c2-b", Size: 20, Samples: []string{"b1", "b2", "b3"}},
		{Label: "c3-c", Size: 10, Samples: []string{"c1"}},
	}}
	count := func(lines []Line) map[string]int {
		m := map[string]int{}
		for _, l := range lines {
			if l.Labels["cluster"] != l.Intent {
				t.Fatalf("line %+v: labels.cluster differs from intent", l)
			}
			m[l.Prompt]++
		}
		return m
	}
	eq := count(Lines(r, false, 1))
	if want := map[string]int{"a1": 1, "a2": 1, "a3": 1, "b1": 1, "b2": 1, "b3": 1, "c1": 1}; !reflect.DeepEqual(eq, want) {
		t.Errorf("equal lines %v, want %v", eq, want)
	}
	// 7 lines by shares 0.7/0.2/0.1: 4.9, 1.4, 0.7 → 4, 1, 0 + remainders to
	// c (0.9) and a (0.9 tie, a first) → 5, 1, 1.
	w := count(Lines(r, true, 1))
	if want := map[string]int{"a1": 2, "a2": 2, "a3": 1, "b1": 1, "c1": 1}; !reflect.DeepEqual(w, want) {
		t.Errorf("weighted lines %v, want %v", w, want)
	}
	if got := apportion([]Cluster{{Size: 1}, {Size: 1}, {Size: 1}}, 100); got[0]+got[1]+got[2] != 100 || got[0] != 34 {
		t.Errorf("apportion 100 over thirds = %v, want [34 33 33]", got)
	}
	if got, want := EscapeTemplate("a {{ .X }} b {{"), `a {{"{{"}} .X }} b {{"{{"}}`; got != want {
		t.Errorf("EscapeTemplate = %s, want %s", got, want)
	}
	var b bytes.Buffer
	if err := WriteLines(&b, []Line{{Prompt: "a <b> & \"c\"", Intent: "c1-x", Labels: map[string]string{"cluster": "c1-x"}}}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), `{"prompt":"a <b> & \"c\"","intent":"c1-x","labels":{"cluster":"c1-x"}}`+"\n"; got != want {
		t.Errorf("line %s, want %s", got, want)
	}
}

func TestSummaryTableGolden(t *testing.T) {
	s := &Summary{Queries: 1234, Embedding: "local hashed TF-IDF (16384 dims)", K: 3, KChosenBy: "linkage gap", MinSize: 25, Silhouette: 0.1234, SilhouetteCI95: 0.0123,
		Boilerplate: []string{"hey", "thanks", "friend"}, Unclustered: UnclusteredSummary{Size: 12, Lonely: 10, Empty: 2, Examples: []string{"asdf", "???"}},
		Scores: []KScore{{K: 2}, {K: 3}, {K: 4}},
		Clusters: []ClusterSummary{
			{Label: "c1-refund", Size: 800, Share: 800.0 / 1234, TopTerms: []string{"refund", "order", "charged twice"}, Example: "I was charged twice,\nplease refund"},
			{Label: "c2-退款", Size: 400, Share: 400.0 / 1234, TopTerms: []string{"退款", "订单"}, Example: "退款 请求"},
			{Label: "c3-x", Size: 34, Share: 34.0 / 1234, TopTerms: []string{"averyveryverylongterm", "anotherquitelongterm", "third"}, Example: strings.Repeat("long example ", 10)},
		},
		Warnings: []string{"silhouette computed on a random sample of 1000 of 1234 queries"}}
	var b bytes.Buffer
	if err := s.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "summary-table.golden", b.Bytes())
}

// TestSupportLogGolden clusters the sample log of the docs (k auto, and
// k = 6 as in docs/workload-build.md) and checks the summary tables against
// their golden files, so the documented output stays
// true.
func TestSupportLogGolden(t *testing.T) {
	qs, err := querylog.ReadFile("testdata/support-log.txt", querylog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Text
	}
	vecs, terms := embedLocal(t, texts)
	for _, tt := range []struct {
		k      int
		golden string
	}{{0, "support-log-table.golden"}, {6, "support-log-k6-table.golden"}} {
		r, err := Build(context.Background(), texts, vecs, terms, Options{K: tt.k, KMax: 12, Samples: 5, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		lines := Lines(r, false, 1)
		var b bytes.Buffer
		if err := Summarize(r, texts, terms.Boilerplate(), lines, "support-log.txt", textembed.Local{}.Name(), "w.jsonl", false, 1).WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, tt.golden, b.Bytes())
	}
}
