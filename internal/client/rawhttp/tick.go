package rawhttp

import "time"

// ticker is a reactor's tick policy (see Config.Tick and the reactor's
// loop): how long it lets events gather before it collects them, from
// what its reads showed.
//
// The tick follows the densest stream: a quarter of its gap between reads
// at once when that is shorter, and growing back (to at most max) only
// once a second, when the streams of the last second allow it. Without
// streams (every call ended by the read that began it, as plain responses
// are) the tick collects whole responses, a wake-up a tick rather than one
// a response, unless their callers wait for their ends to send again:
// then there is none, as a closed loop of 64 callers could pass no more
// than 64 requests a tick.
type ticker struct {
	// tick is the current tick (0: none); max is Config.Tick.
	tick, max time.Duration
	// minGap is the shortest gap between two reads of one stream keeping
	// its pace since the last second began.
	minGap time.Duration
	// streamTick is the tick streams had at the last second's end (0
	// when there were none): a second's first read of a stream takes it
	// back.
	streamTick time.Duration
	// open says a read this second left its call open (a stream, or a
	// response that came in parts); waited that a call ended whose caller
	// waits for it to send again (Request.NextWaits).
	open, waited bool
}

// newTicker returns the policy of a reactor whose longest tick is longest.
func newTicker(longest time.Duration) ticker {
	return ticker{tick: min(MinTick, longest), max: longest, minGap: time.Hour}
}

// paced takes gap g between two reads of a stream keeping its pace.
func (t *ticker) paced(g time.Duration) { t.minGap = min(t.minGap, g) }

// keepsPace says whether gap g between two reads of one call may be a
// stream's pace (a longer one never sets the tick).
func (t *ticker) keepsPace(g time.Duration) bool { return g < 4*t.max }

// openRead notes a read that left its call open: the reactor ticks.
func (t *ticker) openRead() {
	if t.open {
		return
	}
	t.open = true
	t.tick = max(t.tick, t.streamTick, min(MinTick, t.max))
}

// ended notes the end of a call whose caller waits for it to send again
// (nextWaits): no tick holds that back while no stream needs one.
func (t *ticker) ended(nextWaits bool) {
	if !nextWaits || t.waited {
		return
	}
	t.waited = true
	if !t.open {
		t.tick = 0
	}
}

// batched shortens the tick after a batch to a quarter of the densest
// stream's gap, if that is shorter.
func (t *ticker) batched() {
	if d := t.paceTick(); d < t.tick {
		t.tick = d
	}
}

// second starts a new second: the tick the last one's reads allow.
func (t *ticker) second() {
	switch {
	case t.open:
		t.tick = t.paceTick()
		t.streamTick = t.tick
	case t.waited:
		t.tick, t.streamTick = 0, 0
	default:
		t.tick, t.streamTick = t.max, 0
	}
	t.open, t.waited, t.minGap = false, false, time.Hour
}

// paceTick is a quarter of the densest stream's gap, within [MinTick, max].
func (t *ticker) paceTick() time.Duration {
	return min(max(t.minGap/4, MinTick), t.max)
}
