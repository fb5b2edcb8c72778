package cluster

import (
	"context"
	"math"
	"testing"

	"github.com/spate-dev/spate/internal/workload/logbuild/textembed"
)

// TestAgglomerateLinkage checks the linkage of two groups against a hand
// computation: A = {(1, 0), (0.6, 0.8)} and B = {(0, 1)} have an average
// linkage of (0 + 0.8)/2 = 0.4 and a nearest-neighbour linkage (B's one
// query to its nearest in A) of 0.8, so they merge at √(0.4 × 0.8).
func TestAgglomerateLinkage(t *testing.T) {
	points := []textembed.Vector{
		textembed.Dense([]float64{1, 0}),
		textembed.Dense([]float64{0.6, 0.8}),
		textembed.Dense([]float64{0, 1}),
	}
	levels, err := agglomerate(context.Background(), points, groupsOf(points, []int{0, 0, 1}, 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	if want := math.Sqrt(0.4 * 0.8); len(levels) != 2 || math.Abs(levels[0].next-want) > 1e-12 || math.Abs(levels[1].made-want) > 1e-12 {
		t.Errorf("levels %+v, want one merge at %.4f", levels, want)
	}
}

// TestAgglomerateNested checks that the levels' linkages never rise from
// one merge to the next (a level's linkage is the weakest merge so far),
// so that a cut at a linkage gives nested partitions, on a small-intent
// log over-clustered into 80 groups, where the raw linkage does rise after
// some merges (the test fails when a level keeps its merge's linkage).
func TestAgglomerateNested(t *testing.T) {
	l := newSmallIntentLog(7)
	vecs, err := textembed.Local{}.Embed(context.Background(), l.texts)
	if err != nil {
		t.Fatal(err)
	}
	var points []textembed.Vector
	for _, v := range vecs {
		if v.Len() > 0 {
			points = append(points, v)
		}
	}
	points = compact(points)
	km, err := Run(context.Background(), points, 80, KMeansOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	levels, err := agglomerate(context.Background(), points, groupsOf(points, km.Assign, km.K, Dim(points)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(levels); i++ {
		if levels[i].made > levels[i-1].made || levels[i-1].next != levels[i].made {
			t.Fatalf("level %d: made %v after %v (next %v)", i, levels[i].made, levels[i-1].made, levels[i-1].next)
		}
	}
}
