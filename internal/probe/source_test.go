package probe

import (
	"context"

	"testing"

	"github.com/spate-dev/spate/internal/workload"
)

func testSet(t *testing.T, names ...string) *Set {
	t.Helper()
	suites, err := Load(context.Background(), names)
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(suites)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestMix checks that probes come at the chosen fraction, evenly spread,
// cycling through the set round robin over the suites, and that the other
// requests are the base workload's.
func TestMix(t *testing.T) {
	set := testSet(t, "benign", "prompt-extraction")
	if su, _ := set.At(0); su.Name != "benign" {
		t.Errorf("probe 0 from %s, want benign", su.Name)
	}
	if su, _ := set.At(1); su.Name != "prompt-extraction" {
		t.Errorf("probe 1 from %s, want prompt-extraction (round robin)", su.Name)
	}
	base := workload.Synthetic{Input: workload.Lengths{Mean: 8, Min: 1}, Seed: 3}
	for _, f := range []float64{0.1, 0.25, 1.0 / 3, 1} {
		sched := Schedule{Set: set, Fraction: f}
		src, err := Mix(base, sched)
		if err != nil {
			t.Fatal(err)
		}
		const n = 1200
		probes, lastProbe, maxGap := 0, -1, 0
		for i := range uint64(n) {
			r, err := src.Request(i)
			if err != nil {
				t.Fatal(err)
			}
			idx, isProbe := sched.ProbeAt(i)
			if isProbe {
				su, p := set.At(idx)
				// A probe may end when the model is done: never forced past
				// its answer by --ignore-eos (StopFree).
				if !r.KeepAnswer || !r.StopFree || r.Intent != IntentPrefix+su.Family || r.Messages[len(r.Messages)-1].Content != p.messages()[len(p.messages())-1].Content {
					t.Fatalf("fraction %g, request %d: %+v is not probe %s", f, i, r, p.ID)
				}
				if idx != probes%set.Len() {
					t.Fatalf("fraction %g, request %d: probe %d, want %d (cycling)", f, i, idx, probes%set.Len())
				}
				maxGap = max(maxGap, int(i)-lastProbe)
				lastProbe = int(i)
				probes++
				continue
			}
			if r.KeepAnswer || r.StopFree || r.Intent != "" || r.InputTokens == 0 {
				t.Fatalf("fraction %g, request %d: %+v is not the base workload's", f, i, r)
			}
		}
		if want := int(float64(n) * f); probes < want-1 || probes > want+1 {
			t.Errorf("fraction %g: %d probes in %d requests, want %d", f, probes, n, want)
		}
		if limit := int(1/f) + 1; maxGap > limit {
			t.Errorf("fraction %g: gap of %d requests between probes, want at most %d", f, maxGap, limit)
		}
	}
	a, _ := Mix(base, Schedule{Set: set, Fraction: 0.1})
	b, _ := Mix(base, Schedule{Set: set, Fraction: 0.2})
	c, _ := Mix(base, Schedule{Set: testSet(t, "benign"), Fraction: 0.1})
	if a.Digest() == b.Digest() || a.Digest() == c.Digest() || a.Digest() == base.Digest() {
		t.Error("the digest must change with the fraction and the probes")
	}
	for _, bad := range []Schedule{{Set: set, Fraction: 0}, {Set: set, Fraction: 1.5}, {Set: nil, Fraction: 0.5}} {
		if _, err := Mix(base, bad); err == nil {
			t.Errorf("Mix(%+v) accepted", bad)
		}
	}
	if _, err := Mix(nil, Schedule{Set: set, Fraction: 0.5}); err == nil {
		t.Error("Mix(nil) below fraction 1 accepted")
	}
	if _, err := Mix(nil, Schedule{Set: set, Fraction: 1}); err != nil {
		t.Errorf("Mix(nil) at fraction 1: %v", err)
	}
}
