package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/client/sse"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
)

// The reactor path: a request to a plain http:// target is sent with
// package rawhttp, whose reactor reads and stamps every read and, for a
// streamed response, runs the SSE and JSON parsing right there, so a token
// costs one read and no goroutine switch. Figures are the same as the
// net/http path's: each event is stamped with the read that completed it,
// and a non-streamed response ends at its last read (the kernel's receive
// time), not when the caller next ran.

// rawTarget is what the reactor path needs of the endpoint URL.
type rawTarget struct {
	host, path string
}

// newRaw sets up the reactor path when cfg allows it: an http:// target,
// no HTTP client of the caller's, and a platform with the reactor. It
// returns nil otherwise (net/http is used).
func newRaw(cfg Config, endpoint string) (*rawhttp.Client, rawTarget, error) {
	if cfg.NetHTTP || cfg.HTTP != nil || !rawhttp.Available() {
		return nil, rawTarget{}, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "http" {
		return nil, rawTarget{}, nil
	}
	addr := u.Host
	if u.Port() == "" {
		addr += ":80"
	}
	rc, err := rawhttp.New(rawhttp.Config{Addr: addr, Tick: cfg.ReactorTick})
	if err != nil {
		return nil, rawTarget{}, fmt.Errorf("starting the reactor: %w", err)
	}
	return rc, rawTarget{host: u.Host, path: u.RequestURI()}, nil
}

// streamed says responses come as server-sent events: a streamed API
// (not embeddings, rerank or score) asked to stream.
func (c *Client) streamed() bool {
	return c.cfg.Stream && c.cfg.API != Embeddings && !ranked(c.cfg.API)
}

// Close stops the reactor, if the Client has one, once every Do has
// returned. A Client is usable until then.
func (c *Client) Close() error {
	if c.raw != nil {
		return c.raw.Close()
	}
	return nil
}

// appendRequest formats the HTTP/1.1 request of body.
func (c *Client) appendRequest(b []byte, body []byte, rec *record.Record) []byte {
	b = rawhttp.AppendHead(b, http.MethodPost, c.rawTarget.path, c.rawTarget.host, len(body))
	own := c.cfg.Headers
	if _, ok := own["Content-Type"]; !ok {
		b = append(b, "Content-Type: application/json\r\n"...)
	}
	if _, ok := own["Accept"]; !ok && c.streamed() {
		b = append(b, "Accept: text/event-stream\r\n"...)
	}
	if _, ok := own["User-Agent"]; !ok {
		b = append(b, "User-Agent: spate\r\n"...)
	}
	if _, ok := own["Accept-Encoding"]; !ok {
		b = append(b, "Accept-Encoding: identity\r\n"...)
	}
	if _, ok := own["Authorization"]; !ok && c.cfg.APIKey != "" {
		b = append(b, "Authorization: Bearer "...)
		b = append(b, c.cfg.APIKey...)
		b = append(b, "\r\n"...)
	}
	if c.cfg.TraceHeader {
		b = append(b, "Traceparent: "...)
		b = append(b, rec.NewTrace()...)
		b = append(b, "\r\n"...)
	}
	for k, vs := range own {
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	b = append(b, "\r\n"...)
	return append(b, body...)
}

// Field implements rawhttp.FieldHandler: it keeps the Retry-After of an
// error response and notes a redirect.
func (st *stream) Field(name, value []byte) {
	switch {
	case bytes.EqualFold(name, []byte("Retry-After")):
		st.retryAfter = string(value)
	case bytes.EqualFold(name, []byte("Location")):
		st.location = true
	case bytes.EqualFold(name, []byte("Content-Encoding")):
		st.encoding = string(value)
	}
}

// errRedirected stops the reactor path at a redirect: net/http follows it
// (with the redirect policy).
var errRedirected = errors.New("redirected")

// Header implements rawhttp.Handler. It calls the context's
// httptrace.ClientTrace GotFirstResponseByte hook, as net/http does (a
// failover attempt timeout stops there).
func (st *stream) Header(status int, rd rawhttp.Read) error {
	st.status = status
	st.noteRead(rd) // a body of no bytes ends here
	if status >= 300 && status < 400 && st.location {
		return errRedirected
	}
	if st.trace != nil && st.trace.GotFirstResponseByte != nil {
		st.trace.GotFirstResponseByte()
	}
	if status == http.StatusOK {
		return st.c.encodingError(st.encoding)
	}
	return nil
}

// Body implements rawhttp.Handler: the SSE parser is fed as bytes arrive,
// and every event it completes is taken into the record at once, stamped
// with the read's arrival time (the kernel's, where the socket gives it).
//
// A stamp is off by more than 1 ms only if the read's bytes may have waited
// that long (rawhttp.Late says which): those events are counted in
// rec.LateEvents, and what they make untrustworthy beside: the first
// token's time (TTFT, rec.LateFirst) and each gap with a late event at
// either end (rec.LateGaps).
func (st *stream) Body(p []byte, rd rawhttp.Read) error {
	if st.status != http.StatusOK {
		if n := 2048 - len(st.errb); n > 0 {
			st.errb = append(st.errb, p[:min(n, len(p))]...)
		}
		return nil
	}
	if st.done {
		return nil // what follows [DONE] is not read by the other path either
	}
	st.noteRead(rd)
	if !st.streamed {
		// A whole body, read at its end (see doRaw); one byte over the
		// limit says it is too large.
		if err := st.c.bodySize(len(st.body) + len(p)); err != nil {
			return err
		}
		st.body = append(st.body, p...)
		return nil
	}
	before := st.rec.Chunks
	err := st.push.Feed(p, rd.At, st.emit)
	for e := before; e < st.rec.Chunks; e++ {
		st.lateStamp(e, rd)
	}
	return err
}

// noteRead keeps rd as the response's last read so far.
func (st *stream) noteRead(rd rawhttp.Read) {
	st.last2, st.lastBound = rd.At, 0
	if !rd.Kernel && rd.Bound > rawhttp.LateRead {
		st.lastBound = rd.Bound
	}
}

// onEvent is st.emit: one parsed event into the record.
func (st *stream) onEvent(ev *sse.Event) error {
	done, err := st.c.event(st, ev.Data, ev.At, st.rec, st.keep)
	st.done = st.done || done
	return err
}

// doRaw is Do on the reactor path; body is the request's JSON. It returns
// false, with rec untouched, for a redirected request, which Do then sends
// with net/http (which follows redirects under the redirect policy).
func (c *Client) doRaw(ctx context.Context, req *workload.Request, rec *record.Record, body []byte) bool {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if c.cfg.Timeout > 0 {
		t := time.AfterFunc(c.cfg.Timeout, func() { cancel(errTimeout) })
		defer t.Stop()
	}
	st := c.pool.Get().(*stream)
	defer func() {
		st.rec, st.trace = nil, nil
		c.pool.Put(st)
	}()
	st.text, st.bounds, st.last, st.last2, st.events = st.text[:0], st.bounds[:0], time.Time{}, time.Time{}, 0
	st.resetLate()
	st.retryAfter, st.location, st.encoding = "", false, ""
	st.ent.reset()
	st.status, st.errb, st.done, st.rec, st.keep, st.c = 0, st.errb[:0], false, rec, req.KeepAnswer, c
	st.streamed, st.body = c.streamed(), st.body[:0]
	if cap(st.body) > maxPooledBody {
		st.body = nil // a large body once is not kept for every request after
	}
	st.trace = httptrace.ContextClientTrace(ctx)
	if st.emit == nil {
		st.emit = st.onEvent
	}
	st.push.Reset(c.cfg.MaxLine)
	st.raw = c.appendRequest(st.raw[:0], body, rec)
	idle := c.cfg.IdleTimeout
	if !st.streamed {
		idle = 0 // as on the net/http path: a whole body has no pace to hold
	}
	res, err := c.raw.Do(ctx, &rawhttp.Request{Raw: st.raw, Handler: st, IdleTimeout: idle, NextWaits: rec.ClosedLoop})
	if errors.Is(err, errRedirected) && ctx.Err() == nil {
		return false
	}
	if !res.Written.IsZero() {
		rec.Written = res.Written
	}
	res.FillPhases(&rec.Phases)
	rec.ReadLag = max(res.ReadLag, 1) // measured, even when it rounds to 0
	if st.status != 0 {
		rec.Status = st.status
	}
	if err == nil && st.status == http.StatusOK && !st.streamed {
		// The whole body came: it ended at its last read.
		rec.End = st.last2
		err = c.parseWhole(st, st.body, rec, req)
	}
	if err == nil && st.status == http.StatusOK && st.streamed && !st.done {
		// The stream ended: an event without its blank line still counts.
		err = st.push.End(st.last2, st.emit)
		if err == nil && !st.done {
			err = endOfStream(c, st, st.push.Stray())
		}
	}
	if err != nil {
		if errors.Is(err, rawhttp.ErrIdleTimeout) {
			cancel(errStalled)
		}
		kind, msg := classify(ctx, err)
		switch {
		case st.status == 0 && (kind == record.RequestFailed || kind == record.StreamBroken) && !errors.Is(err, rawhttp.ErrMalformed):
			kind = record.ConnectReset // no response at all
		case errors.Is(err, rawhttp.ErrMalformed):
			kind = record.BadResponse
		case kind == record.RequestFailed && st.status != 0:
			kind = record.StreamBroken
		}
		if st.status == 0 {
			kind, msg = c.asHTTP2Only(err, kind, msg)
		}
		rec.Fail(kind, msg, time.Now())
		return true
	}
	if st.status != http.StatusOK {
		rec.Fail(record.HTTPStatus(st.status), statusMessage(st.status, st.errb), time.Now())
		rec.RetryAfter = RetryAfter(st.status, st.retryAfter, time.Now())
		return true
	}
	c.finish(ctx, st, req, rec)
	st.endBound(rec, st.streamed)
	return true
}

// endBound gives rec, when it ended at the response's last read and that
// read's stamp is its own, the read's bound as its EndBound; streamed says
// the response was read as events.
func (st *stream) endBound(rec *record.Record, streamed bool) {
	if !rec.Failed() && rec.End.Equal(st.last2) {
		rec.EndBound = st.lastBound
		if !streamed && rec.EndBound > 0 && rec.FirstToken.Equal(rec.End) {
			// A whole answer's first token is its end, and as late.
			rec.LateEvents, rec.LateFirst, rec.FirstBound = 1, true, rec.EndBound
		}
	}
}

// maxPooledBody is the largest non-streamed body buffer a pooled stream
// keeps for the next request.
const maxPooledBody = 1 << 20

// resetLate clears the late-stamp state lateStamp keeps, for a new
// response (on either path).
func (st *stream) resetLate() {
	st.late.Reset()
	st.lastBound = 0
}

// lateStamp takes content event e, which came in read rd, into the
// record's count of late stamps (rawhttp.Late; see Body).
func (st *stream) lateStamp(e int, rd rawhttp.Read) {
	st.late.Stamp(e, rd)
	l, rec := &st.late, st.rec
	rec.LateEvents, rec.LateGaps, rec.LateFirst, rec.FirstBound = l.Events, l.Gaps, l.First, l.FirstBound
}
