package vector

import (
	"math"
	"strings"
	"testing"
)

// TestJointPlanted plants 2,000 queries whose latency is 1 to 2,000 ms and
// whose recall falls with latency: 1 up to 1,000 ms, 0.95 up to 1,800 ms,
// 0.9 beyond (the nearest neighbour found only at recall 1); the bands and
// levels are read off exactly.
func TestJointPlanted(t *testing.T) {
	const n = 2000
	var lat, recall []float64
	var hit []bool
	for i := 1; i <= n; i++ {
		r := 1.0
		switch {
		case i > 1800:
			r = 0.9
		case i > 1000:
			r = 0.95
		}
		lat, recall, hit = append(lat, float64(i)), append(recall, r), append(hit, r == 1)
	}
	bands, levels, warns := Joint(lat, recall, hit)
	// Nearest-rank cuts of 1..2000: P50 1000, P90 1800, P99 1980, P99.9 1998.
	want := []struct {
		from, to float64
		queries  int
		recall   float64
		hit      float64
	}{
		{1, 1000, 999, 1, 1},
		{1000, 1800, 800, (1 + 799*0.95) / 800, 1.0 / 800},
		{1800, 1980, 180, (0.95 + 179*0.9) / 180, 0},
		{1980, 1998, 18, 0.9, 0},
		{1998, 2000, 3, 0.9, 0},
	}
	if len(bands) != len(want) {
		t.Fatalf("bands %+v", bands)
	}
	for i, w := range want {
		b := bands[i]
		if b.FromMS != w.from || b.ToMS != w.to || b.Queries != w.queries || math.Abs(b.MeanRecall-w.recall) > 1e-12 || math.Abs(b.HitRate-w.hit) > 1e-12 {
			t.Errorf("band %s = %+v, want %+v", b.Band, b, w)
		}
	}
	byName := map[string]int{}
	for i, l := range levels {
		byName[l.Level] = i
	}
	lt := levels[byName["recall < 0.92"]]
	if lt.Queries != 200 || *lt.P50MS != 1900 || *lt.P99MS != 1998 || lt.P999MS != nil {
		t.Errorf("recall < 0.92: %+v", lt)
	}
	ge := levels[byName["recall >= 0.95"]]
	if ge.Queries != 1800 || ge.P999MS == nil || *ge.P999MS != 1799 {
		t.Errorf("recall >= 0.95: %+v (P99.9 %v)", ge, ge.P999MS)
	}
	one := levels[byName["recall = 1"]]
	if one.Queries != 1000 || *one.P99MS != 990 || *one.P999MS != 999 {
		t.Errorf("recall = 1: %+v", one)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "recall < 0.92: 200 queries, too few for a P99.9") {
		t.Errorf("warnings %q", warns)
	}
	if b, l, w := Joint(nil, nil, nil); b != nil || l != nil || w != nil {
		t.Error("figures from no queries")
	}
}

func TestHit(t *testing.T) {
	truth := []int32{7, 3, 9}
	for _, tc := range []struct {
		ret  []int64
		k    int
		want bool
	}{{[]int64{7, 1}, 2, true}, {[]int64{1, 7}, 2, true}, {[]int64{1, 2, 7}, 2, false}, {nil, 3, false}} {
		if got := Hit(tc.ret, truth, tc.k); got != tc.want {
			t.Errorf("Hit(%v, k=%d) = %v", tc.ret, tc.k, got)
		}
	}
}
