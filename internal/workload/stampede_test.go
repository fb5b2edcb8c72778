package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spate-dev/spate/experiment"
)

// TestStampedeKeys: requests 10..14 and 30..34 are bursts 0 and 1. Fresh
// keys give each burst one prompt of its own, asked for by no other
// request (a dataset's line gets a tag); expiring keys give every burst
// the most popular prompt of the pool.
func TestStampedeKeys(t *testing.T) {
	burst := func(n uint64) (int, bool) {
		switch {
		case n >= 10 && n < 15:
			return 0, true
		case n >= 30 && n < 35:
			return 1, true
		}
		return -1, false
	}
	seed := uint64(2)
	ds := filepath.Join(t.TempDir(), "d.jsonl")
	os.WriteFile(ds, []byte("{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n"), 0o644)
	for _, c := range []struct {
		name string
		spec experiment.Workload
		keys string
	}{
		{"synthetic fresh", experiment.Workload{Seed: &seed, InputTokens: "8"}, FreshKeys},
		{"dataset fresh", experiment.Workload{Seed: &seed, Dataset: ds}, FreshKeys},
		{"popular expiring", experiment.Workload{Seed: &seed, InputTokens: "8", Popularity: &experiment.Popularity{Zipf: 1.5, Pool: 50}}, ExpiringKeys},
	} {
		b, err := Build(c.spec, BuildOptions{Burst: burst, BurstKeys: c.keys})
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		keyOf := map[int]string{}
		for n := uint64(0); n < 60; n++ {
			r, err := b.Source.Request(n)
			if err != nil {
				t.Fatal(err)
			}
			j, ok := burst(n)
			label := r.Labels[len(r.Labels)-1]
			if label.Key != "stampede" || (label.Value == "burst") != ok {
				t.Fatalf("%s: request %d labels %v", c.name, n, r.Labels)
			}
			count[r.Prompt]++
			if ok {
				if k, seen := keyOf[j]; seen && k != r.Prompt {
					t.Fatalf("%s: burst %d asks for %q and %q", c.name, j, k, r.Prompt)
				}
				keyOf[j] = r.Prompt
			}
		}
		switch c.keys {
		case FreshKeys:
			if keyOf[0] == keyOf[1] || count[keyOf[0]] != 5 || count[keyOf[1]] != 5 {
				t.Errorf("%s: burst keys %q and %q asked %d and %d times, want two keys of 5 each", c.name, keyOf[0], keyOf[1], count[keyOf[0]], count[keyOf[1]])
			}
			if c.spec.Dataset != "" && !strings.Contains(keyOf[0], "(ref ") {
				t.Errorf("%s: a dataset's fresh key %q has no tag", c.name, keyOf[0])
			}
		case ExpiringKeys:
			top, most := "", 0
			for p, n := range count {
				if n > most {
					top, most = p, n
				}
			}
			if keyOf[0] != keyOf[1] || keyOf[0] != top {
				t.Errorf("%s: bursts ask for %q and %q, want the most popular prompt %q", c.name, keyOf[0], keyOf[1], top)
			}
		}
	}
}
