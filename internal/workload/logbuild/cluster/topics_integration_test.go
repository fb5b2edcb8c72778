//go:build integration

package cluster

import "testing"

// TestTopicsNotBoilerplateSweep measures how often the conditions of
// TestTopicsNotBoilerplate hold over 20 generated logs (seeds 1..20), with
// boilerplate weighting and without: 19 of 20 with, 7 of 20 without (19
// and 11 with average linkage alone, when it was written). It asserts at least 18 with and at most 14 without, so
// that the weighting is shown to matter beyond the four logs of the
// default test.
func TestTopicsNotBoilerplateSweep(t *testing.T) {
	on, off := 0, 0
	for seed := uint64(1); seed <= 20; seed++ {
		r, l := buildTopicLog(t, seed, false)
		if bad := recovered(r, l); bad == "" {
			on++
		} else {
			t.Logf("log %d with weighting: %s", seed, bad)
		}
		r, l = buildTopicLog(t, seed, true)
		if bad := recovered(r, l); bad == "" {
			off++
		}
	}
	t.Logf("recovered: %d of 20 logs with boilerplate weighting, %d without", on, off)
	if on < 18 || off > 14 {
		t.Errorf("recovered %d of 20 with weighting (want ≥ 18) and %d without (want ≤ 14)", on, off)
	}
}
