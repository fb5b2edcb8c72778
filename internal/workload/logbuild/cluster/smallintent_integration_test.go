//go:build integration

package cluster

import "testing"

// TestSmallIntentsKeptSweep counts the small-intent logs (seeds 1..100)
// on which the conditions of TestSmallIntentsKept hold. When it was
// written: 96 of 100, 39 of the first 40 (on which the rules were chosen)
// and 57 of the other 60; 67 of 100 with average linkage alone (26 of the
// first 40, 41 of the other 60). Log 39 fails on its label (five of
// finance's 20 queries, those of "credit card debt", join the billing
// cluster, which is then named "card"), log 62 likewise ("account", from
// billing's "paypal account" and login's "account is locked"), and logs
// 48 and 95 lose their 5 % topic (billing merged with finance's "interest
// rate" queries; finance split into two clusters of 10). It asserts at
// least 96.
func TestSmallIntentsKeptSweep(t *testing.T) {
	const logs = 100
	distinct := distinctiveWords()
	kept := 0
	for seed := uint64(1); seed <= logs; seed++ {
		r, l, sizes := buildSmallIntentLog(t, seed)
		if bad, _, _ := intentsKept(r, l, sizes, distinct); bad == "" {
			kept++
		} else {
			t.Logf("log %d (k = %d): %s", seed, r.K, bad)
		}
	}
	t.Logf("small intents kept on %d of %d logs", kept, logs)
	if kept < 96 {
		t.Errorf("small intents kept on %d of %d logs, want ≥ 96", kept, logs)
	}
}
