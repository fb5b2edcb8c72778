package rawhttp

import (
	"testing"
	"time"
)

// TestLateCounts: which events of a response are counted late from the
// reads and writes they came in. Each event is (read, write); every read
// here is held (its bound over LateRead), stamped by the kernel unless
// said otherwise.
func TestLateCounts(t *testing.T) {
	const held = 40 * time.Millisecond
	type ev struct{ read, write int }
	for _, tc := range []struct {
		name       string
		kernel     bool
		events     []ev
		late, gaps int
		first      bool
	}{
		{name: "one event a read", kernel: true, events: []ev{{1, 1}, {2, 2}, {3, 3}}},
		{name: "two writes in one read", kernel: true, events: []ev{{1, 1}, {1, 2}, {2, 3}}, late: 1, gaps: 1, first: true},
		{name: "one write of two events, alone in its read", kernel: true, events: []ev{{1, 1}, {1, 1}, {2, 2}}},
		// A stalled reader took the write of the first two and the
		// third's together: both of the first write's events carry the
		// third's time.
		{name: "a write of two, then another, in one read", kernel: true, events: []ev{{1, 1}, {1, 1}, {1, 2}, {2, 3}}, late: 2, gaps: 2, first: true},
		{name: "a later write of two, then another, in one read", kernel: true, events: []ev{{1, 1}, {2, 2}, {2, 2}, {2, 3}, {3, 4}}, late: 2, gaps: 3},
		{name: "three writes in one read", kernel: true, events: []ev{{1, 1}, {1, 2}, {1, 3}, {2, 4}}, late: 2, gaps: 2, first: true},
		{name: "the read's own time", events: []ev{{1, 1}, {1, 1}, {2, 2}}, late: 3, gaps: 2, first: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l Late
			for i, e := range tc.events {
				l.Stamp(i, Read{N: e.read, Chunk: e.write, Kernel: tc.kernel, Bound: held})
			}
			if l.Events != tc.late || l.Gaps != tc.gaps || l.First != tc.first {
				t.Errorf("late events %d, gaps %d, first %v; want %d, %d, %v", l.Events, l.Gaps, l.First, tc.late, tc.gaps, tc.first)
			}
			if want := map[bool]time.Duration{true: held}[tc.first]; l.FirstBound != want {
				t.Errorf("first bound %v, want %v", l.FirstBound, want)
			}
		})
	}
}
