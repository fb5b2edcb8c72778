package rawhttp

import (
	"testing"
	"time"
)

// TestTicker drives the tick policy through what a reactor sees and checks
// the tick after each step. "seconds" are the once-a-second resets.
func TestTicker(t *testing.T) {
	const ms = time.Millisecond
	type step struct {
		do   string        // open, paced, waits, ends, batch, second
		gap  time.Duration // for paced
		want time.Duration // the tick after the step
	}
	for _, tc := range []struct {
		name  string
		max   time.Duration
		steps []step
	}{
		{"streams at 2 ms: a quarter of their gap", DefaultTick, []step{
			{do: "open", want: MinTick},
			{do: "paced", gap: 2 * ms, want: MinTick},
			{do: "batch", want: MinTick}, // shrinks only
			{do: "second", want: 500 * time.Microsecond},
			{do: "open", want: 500 * time.Microsecond},
		}},
		{"sparse streams: the whole tick after a second", DefaultTick, []step{
			{do: "open", want: MinTick},
			{do: "second", want: DefaultTick},
			{do: "open", want: DefaultTick},
		}},
		{"a denser stream shortens it at once", DefaultTick, []step{
			{do: "open", want: MinTick},
			{do: "second", want: DefaultTick},
			{do: "paced", gap: 2 * ms, want: DefaultTick},
			{do: "batch", want: 500 * time.Microsecond},
		}},
		{"plain responses nobody waits on: the whole tick", DefaultTick, []step{
			{do: "ends", want: MinTick},
			{do: "second", want: DefaultTick},
			{do: "ends", want: DefaultTick},
		}},
		{"a closed loop of plain requests: no tick", DefaultTick, []step{
			{do: "waits", want: 0},
			{do: "second", want: 0},
			{do: "waits", want: 0},
		}},
		{"a closed loop's stream keeps its tick", DefaultTick, []step{
			{do: "open", want: MinTick},
			{do: "waits", want: MinTick},
			{do: "paced", gap: 2 * ms, want: MinTick},
			{do: "second", want: 500 * time.Microsecond},
			// A stream's end first in the new second drops the tick
			// until the next read of a stream, which takes back the
			// streams' tick (it took MinTick before).
			{do: "waits", want: 0},
			{do: "open", want: 500 * time.Microsecond},
		}},
		{"streams come back after a second without", DefaultTick, []step{
			{do: "open", want: MinTick},
			{do: "paced", gap: 2 * ms, want: MinTick},
			{do: "second", want: 500 * time.Microsecond},
			{do: "waits", want: 0},
			{do: "second", want: 0},
			{do: "open", want: MinTick},
		}},
		{"a tick set under MinTick holds", 100 * time.Microsecond, []step{
			{do: "open", want: 100 * time.Microsecond},
			{do: "paced", gap: 20 * ms, want: 100 * time.Microsecond},
			{do: "second", want: 100 * time.Microsecond},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := newTicker(tc.max)
			for i, s := range tc.steps {
				switch s.do {
				case "open":
					tk.openRead()
				case "paced":
					if tk.keepsPace(s.gap) {
						tk.paced(s.gap)
					}
				case "waits":
					tk.ended(true)
				case "ends":
					tk.ended(false)
				case "batch":
					tk.batched()
				case "second":
					tk.second()
				default:
					t.Fatalf("step %d: unknown %q", i, s.do)
				}
				if tk.tick != s.want {
					t.Fatalf("step %d (%s): tick %v, want %v", i, s.do, tk.tick, s.want)
				}
			}
		})
	}
}
