package vector

import (
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"context"
	"math"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/spate-dev/spate/sim"
)

func TestCompareDriftKnownVectors(t *testing.T) {
	base := &Baseline{Canaries: []Canary{{Text: "a", Vector: []float32{1, 0}}, {Text: "b", Vector: []float32{0, 2}}}}
	// a turns 45° and grows to √2; b stays put and shrinks to half.
	now := [][]float32{{1, 1}, {0, 1}}
	d, err := CompareDrift(base, now, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := []CanaryDrift{
		{Text: "a", BaselineNorm: 1, Norm: math.Sqrt2, NormShift: math.Sqrt2 - 1, CosineDrift: 1 - 1/math.Sqrt2},
		{Text: "b", BaselineNorm: 2, Norm: 1, NormShift: -0.5, CosineDrift: 0},
	}
	for i, w := range want {
		g := d.Canaries[i]
		if g.Text != w.Text || !near(g.BaselineNorm, w.BaselineNorm) || !near(g.Norm, w.Norm) || !near(g.NormShift, w.NormShift) || !near(g.CosineDrift, w.CosineDrift) {
			t.Errorf("canary %d: %+v, want %+v", i, g, w)
		}
	}
	if !near(d.MeanCosineDrift, (1-1/math.Sqrt2)/2) || !near(d.MaxCosineDrift, 1-1/math.Sqrt2) || !near(d.MaxNormShift, 0.5) {
		t.Errorf("totals %+v", d)
	}
	// Mean norms 1.5 → (√2 + 1)/2: the seed's mean L2-norm shift; a moves
	// by (0, 1), b by (0, −1): the centroid stays, each moved 1.
	if !near(d.MeanNormShift, (math.Sqrt2+1)/2-1.5) || !near(d.CentroidShift, 0) || !near(d.MeanDisplacement, 1) || d.Normalised {
		t.Errorf("shifts %+v", d)
	}
	for _, tc := range []struct {
		w    Worst
		want string
	}{
		{Worst{Cosine: 0.001, MeanNormShift: -0.19}, "mean L2-norm shift -0.1900 beyond --max-norm-shift 0.18"},
		{Worst{Cosine: 0.02, MeanNormShift: 0.1}, "max cosine drift 0.020000 > --max-drift 0.01"},
		{Worst{Cosine: 0.001, MeanNormShift: 0.18}, ""},
	} {
		err := tc.w.Gate(0.01, DefaultMaxNormShift)
		if (err == nil) != (tc.want == "") || err != nil && err.Error()[:len(tc.want)] != tc.want {
			t.Errorf("Gate(%+v) = %v, want %q", tc.w, err, tc.want)
		}
	}
	// Unit-norm embeddings: the norm shift cannot move; a note says so.
	unit := &Baseline{Canaries: []Canary{{Text: "u", Vector: []float32{0.6, 0.8}}}}
	if du, _ := CompareDrift(unit, [][]float32{{0.8, 0.6}}, time.Time{}); !du.Normalised || !near(du.MeanNormShift, 0) || !near(du.CentroidShift, math.Sqrt(0.08)) {
		t.Errorf("unit-norm drift %+v", du)
	}
	if _, err := CompareDrift(base, [][]float32{{1, 0, 0}, {0, 1, 0}}, time.Time{}); err == nil {
		t.Error("another dimension: no error")
	}
	var buf bytes.Buffer
	if err := WriteDrift(&buf, d); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "drift.golden", buf.Bytes())
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestEmbedCanariesFromSimulator(t *testing.T) {
	s, err := sim.New(sim.Deterministic(time.Millisecond, time.Millisecond, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	e := &Embedder{BaseURL: srv.URL + "/v1", Model: "spate-sim"}
	ctx := context.Background()
	v1, err := e.Embed(ctx, DefaultCanaries)
	if err != nil {
		t.Fatal(err)
	}
	if len(v1) != len(DefaultCanaries) || len(v1[0]) != sim.DefaultEmbeddingDim {
		t.Fatalf("%d vectors of %d dims", len(v1), len(v1[0]))
	}
	base := &Baseline{Model: "spate-sim"}
	for i, text := range DefaultCanaries {
		base.Canaries = append(base.Canaries, Canary{text, v1[i]})
	}
	v2, err := e.Embed(ctx, DefaultCanaries)
	if err != nil {
		t.Fatal(err)
	}
	d, err := CompareDrift(base, v2, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// The simulator embeds deterministically: no drift at all.
	if d.MaxCosineDrift > 1e-6 || d.MaxNormShift > 1e-6 {
		t.Errorf("deterministic embeddings drifted: %+v", d)
	}
	// Different texts embed differently: comparing with a shuffled
	// baseline shows drift.
	shuffled := append(v2[1:], v2[0])
	if d, _ := CompareDrift(base, shuffled, time.Now()); d.MeanCosineDrift < 0.01 {
		t.Errorf("shuffled canaries: mean drift %v, want clearly above 0", d.MeanCosineDrift)
	}
}

// A baseline path under a directory that does not exist yet is created,
// as every other output of spate is.
func TestBaselineWriteCreatesItsDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spate-results", "drift", "baseline.json")
	b := &Baseline{Model: "m", Canaries: []Canary{{Text: "a", Vector: []float32{1, 0}}}}
	if err := b.Write(path); err != nil {
		t.Fatal(err)
	}
	got, err := ReadBaseline(context.Background(), path)
	if err != nil || len(got.Canaries) != 1 {
		t.Fatalf("read back: %v %+v", err, got)
	}
}
