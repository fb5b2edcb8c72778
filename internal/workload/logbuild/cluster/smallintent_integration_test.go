//go:build integration

package cluster

import "testing"

// TestSmallIntentsKeptSweep counts the small-intent logs (seeds 1..40) on
// which the conditions of TestSmallIntentsKept hold. When it was written:
// 39 of 40 (log 39 fails on its label only: five of finance's 20 lines,
// those of "credit card debt", join the billing cluster, which is then
// named "card"); 26 of 40 before the nearest-neighbour linkage (logs 7, 8,
// 9, 17, 22, 23, 25, 27, 29, 30, 34, 35, 36 and 39 failed, 16 of the
// first 20). It asserts at least 39.
func TestSmallIntentsKeptSweep(t *testing.T) {
	distinct := distinctiveWords()
	kept := 0
	for seed := uint64(1); seed <= 40; seed++ {
		r, l, sizes := buildSmallIntentLog(t, seed)
		if bad, _, _ := intentsKept(r, l, sizes, distinct); bad == "" {
			kept++
		} else {
			t.Logf("log %d (k = %d): %s", seed, r.K, bad)
		}
	}
	t.Logf("small intents kept on %d of 40 logs", kept)
	if kept < 39 {
		t.Errorf("small intents kept on %d of 40 logs, want ≥ 39", kept)
	}
}
