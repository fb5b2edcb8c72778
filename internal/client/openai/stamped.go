package openai

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/client/sse"
	"github.com/spate-dev/spate/internal/record"
)

// The net/http path (https:// targets, redirects, SPATE_NETHTTP=1) reads
// through a connection whose reads are stamped (rawhttp.StampDial, set in
// NewTransport): an event is stamped with the receive time of the last
// read under it, not when the reading goroutine ran, and counted late as
// on the reactor path (see Body): with the kernel's receive time, an event
// that shares its read with a later one from another write of the
// server's; without, every event of a read that may have waited over 1 ms.
// Over TLS, a write of the server's is one record (or several, none shared
// with another write), and a read of net/http's body hands on at most one
// record: events that one body read completes arrived together, as the
// events of one chunk do on the reactor path. Over cleartext a body read
// may hold several writes, so every event of a shared read but its last
// is counted late. A connection of the caller's own client
// (Config.HTTP without NewTransport's dialer) is read as before: stamped
// when the read returned, with no bound.

// reset readies the pooled st for a request of rec on the net/http path.
func (st *stream) reset(rec *record.Record) {
	st.text, st.bounds, st.events, st.rec = st.text[:0], st.bounds[:0], 0, rec
	st.ent.reset()
	st.sc, st.rd, st.last2 = nil, rawhttp.Read{}, time.Time{}
	st.resetLate()
}

// gotConn is the GotConn hook: the connection that carries the request
// (the last one, after redirects).
func (st *stream) gotConn(c net.Conn) {
	st.sc, st.bodyReads = rawhttp.Stamped(c), 0
	_, st.records = c.(*tls.Conn)
}

// stampedClock returns the sse.Clock of the response's reads: nil (the
// time a read returned) unless its connection stamps them.
func (st *stream) stampedClock() sse.Clock {
	if st.sc == nil {
		return nil
	}
	if st.clock == nil {
		st.clock = st.stamp
	}
	return st.clock
}

// stamp takes the connection's latest read as the response's last and
// returns its time: the body read that just returned can only have
// handed on bytes that read or earlier ones brought.
func (st *stream) stamp() time.Time {
	st.rd = st.sc.Last()
	if st.records {
		st.bodyReads++
		st.rd.Chunk = st.bodyReads // one record: one write of the server's
	}
	st.noteRead(st.rd)
	return st.rd.At
}
