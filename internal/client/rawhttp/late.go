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
// comes from a later read: one from the same read but another write makes
// the events before it late after all — the one before it and every event
// of that one's write in the read (a stalled reader can take two writes of
// two events each in one read: all of the first write's are late). The
// zero Late is ready for a response; Reset readies it for the next.
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

	// lastLate says the last event was late, lastRead and lastChunk are
	// its read and write. run counts the events, ending with the last,
	// that came on time in its read and write; runFirst says they begin
	// with the response's first, afterLate that the event before them
	// was late.
	lastLate            bool
	lastRead, lastChunk int
	run                 int
	runFirst, afterLate bool
}

// Reset readies l for another response.
func (l *Late) Reset() { *l = Late{} }

// Stamp takes content event e (0 for a response's first), which came in
// read rd, into the counts.
func (l *Late) Stamp(e int, rd Read) {
	late := rd.Bound > LateRead
	sameRead := e > 0 && rd.N == l.lastRead
	sameWrite := sameRead && rd.Chunk > 0 && rd.Chunk == l.lastChunk
	if late && rd.Kernel && sameRead && !sameWrite && l.run > 0 {
		// The events of the last one's write share this read, not its
		// write, and are not its last: late, and so is each gap among
		// them and the one into them (counted on time before).
		l.Events += l.run
		l.Bound = max(l.Bound, rd.Bound)
		if l.runFirst {
			l.First, l.FirstBound = true, rd.Bound
		}
		l.Gaps += l.run - 1
		if !l.runFirst && !l.afterLate {
			l.Gaps++
		}
		l.lastLate, l.run = true, 0
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
	switch {
	case isLate:
		l.run = 0
	case sameWrite && l.run > 0:
		l.run++
	default:
		l.run, l.runFirst, l.afterLate = 1, e == 0, l.lastLate
	}
	l.lastLate, l.lastRead, l.lastChunk = isLate, rd.N, rd.Chunk
}
