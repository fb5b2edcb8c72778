package rawhttp

import "time"

// Late counts which content events of one response were stamped late —
// may be off by more than LateRead — from the reads they came in (see
// Read): with the kernel's receive time, every content event of a read
// but its last (they share the last one's time), unless both came in one
// write of the server's (Read.Chunk: one chunk of a chunked body, or one
// TLS record); with the read's own time, every event of a read whose bound
// is over LateRead. What they make untrustworthy beside is counted too:
// the first event's time (TTFT) and each gap with a late event at either
// end. The first of a response's events is one in its whole stream, so a
// share of late events can stay small while a share of late first events,
// which a TTFT p99 rests on, does not.
//
// The last event of a read is not known to be its last until the next one
// comes from a later read: one from the same read makes the one before it
// late after all. The zero Late is ready for a response; Reset readies it
// for the next.
type Late struct {
	// Events is the number of late events, Gaps of gaps with a late event
	// at either end.
	Events, Gaps int
	// First says the first event is late, by at most FirstBound.
	First      bool
	FirstBound time.Duration
	// Bound is the largest Read.Bound that made an event late: how far
	// any late event's stamp may be from its bytes' arrival.
	Bound time.Duration

	// lastLate and lastLate2 say the last event and the one before were
	// late, lastRead and lastChunk the last one's read and write.
	lastLate, lastLate2 bool
	lastRead, lastChunk int
}

// Reset readies l for another response.
func (l *Late) Reset() { *l = Late{} }

// Stamp takes content event e (0 for a response's first), which came in
// read rd, into the counts.
func (l *Late) Stamp(e int, rd Read) {
	late := rd.Bound > LateRead
	sameWrite := rd.Chunk > 0 && rd.Chunk == l.lastChunk
	if e > 0 && late && rd.Kernel && rd.N == l.lastRead && !sameWrite && !l.lastLate {
		// The previous event shares this read, not its write, and is
		// not its last.
		l.Events++
		l.Bound = max(l.Bound, rd.Bound)
		if e == 1 {
			l.First, l.FirstBound = true, rd.Bound
		} else if !l.lastLate2 {
			l.Gaps++ // the gap into it, counted on time before
		}
		l.lastLate = true
	}
	isLate := late && !rd.Kernel
	if isLate {
		l.Events++
		l.Bound = max(l.Bound, rd.Bound)
	}
	if e == 0 {
		l.First, l.FirstBound = isLate, 0
		if isLate {
			l.FirstBound = rd.Bound
		}
	} else if isLate || l.lastLate {
		l.Gaps++
	}
	l.lastLate2, l.lastLate, l.lastRead, l.lastChunk = l.lastLate, isLate, rd.N, rd.Chunk
}
