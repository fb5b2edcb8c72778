package workflow

import (
	"context"
	"net/http/httptrace"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/record"
)

// stepReads is what a step's response's reads say of when its bytes came,
// when its connection stamps them (rawhttp.StampDial, set in New; an
// HTTP/1.1 connection carries one response at a time). A streamed step's
// events and every step's end are stamped with the read that brought them
// — the kernel's receive time where the socket gives it — not when the
// step's goroutine next ran, and a stamp that may be off by more than
// 1 ms is counted late as on the LLM clients (rawhttp.Late): an event that
// shared its read with a later one from another write of the server's (a
// TLS record is one write; over cleartext every event of a shared read
// but its last), or, without the kernel's times, any event or end of a
// read that may have waited. The run-level figures are the answer step's
// and the last step's (see answer), and so are their late stamps.
type stepReads struct {
	sc        *rawhttp.StampedConn
	rd        rawhttp.Read // the latest read
	records   bool         // over TLS: each body read is one record
	bodyReads int
	late      rawhttp.Late
	endBound  time.Duration // how much earlier than End its last read's bytes may have come (not the kernel's time)
	stamp     func() time.Time
}

// trace returns ctx with a hook that keeps the step's connection, if it
// stamps reads and carries one response at a time (not HTTP/2).
func (s *stepReads) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		s.sc, s.records = rawhttp.StampedResponses(i.Conn)
		s.bodyReads = 0
	}})
}

// clock returns the sse.Clock of a streamed step: the time of the
// connection's latest read (nil, the time a read returned, without one).
func (s *stepReads) clock() func() time.Time {
	if s.sc == nil {
		return nil
	}
	if s.stamp == nil {
		s.stamp = func() time.Time {
			s.rd = s.sc.Last()
			if s.records {
				s.bodyReads++
				s.rd.Chunk = s.bodyReads // one record: one write of the server's
			}
			return s.rd.At
		}
	}
	return s.stamp
}

// event takes content event e of a streamed step, just read, into the
// count of late stamps.
func (s *stepReads) event(e int) {
	if s.sc != nil {
		s.late.Stamp(e, s.rd)
	}
}

// end returns when the step's response ended: its last read's stamp, or
// now when the connection does not stamp reads (or nothing was read).
func (s *stepReads) end(now time.Time) time.Time {
	if s.sc == nil {
		return now
	}
	rd := s.sc.Last()
	if rd.At.IsZero() || rd.At.After(now) {
		return now
	}
	if !rd.Kernel && rd.Bound > rawhttp.LateRead {
		s.endBound = rd.Bound
	}
	return rd.At
}

// readLag is the step's Step.ReadLag: how late its reads came after their
// data, or the largest bound that made an event late, whichever is larger
// (at least 1 ns, so that a stamped step says it was measured); 0 without
// stamped reads.
func (s *stepReads) readLag() time.Duration {
	if s.sc == nil {
		return 0
	}
	return max(s.sc.Lag(), s.late.Bound, s.endBound, 1)
}

// lateInto gives rec the late stamps of its run-level figures: the answer
// step's events (ans: its reads, nil when no step streamed) and the last
// step's end (last), as the LLM clients give theirs.
func lateInto(rec *record.Record, ans, last *stepReads) {
	if ans != nil {
		l := &ans.late
		rec.LateEvents, rec.LateGaps, rec.LateFirst, rec.FirstBound = l.Events, l.Gaps, l.First, l.FirstBound
	}
	rec.EndBound = last.endBound
	if ans == nil && rec.EndBound > 0 && rec.FirstToken.Equal(rec.End) {
		// A whole answer's first token is its end, and as late.
		rec.LateEvents, rec.LateFirst, rec.FirstBound = 1, true, rec.EndBound
	}
}
