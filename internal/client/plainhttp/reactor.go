package plainhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/record"
)

// The reactor path: requests to plain http:// targets are sent with
// package rawhttp, whose reactor reads every response where it lands (one
// read, no goroutine woken per read); the sending goroutine parks once per
// request. TTFT is the time of the read that completed the headers.

// rawState is the reactor path's per-request state, pooled.
type rawState struct {
	buf    []byte
	status int
	first  time.Time // the read that completed the headers
	last   time.Time // the response's last read
	// firstBound and lastBound are how much earlier than first and last
	// those reads' bytes may have come, when the stamp is the read's own
	// time and late (no kernel receive time); 0 otherwise.
	firstBound, lastBound time.Duration
	retryAfter            string
}

// bound is how much earlier than rd's stamp its bytes may have come, when
// that can be over 1 ms: a late read without the kernel's receive time.
func bound(rd rawhttp.Read) time.Duration {
	if rd.Kernel || rd.Bound <= rawhttp.LateRead {
		return 0
	}
	return rd.Bound
}

// Field implements rawhttp.FieldHandler: it keeps the Retry-After.
func (s *rawState) Field(name, value []byte) {
	// The length first (no letter of the name folds to a longer rune).
	if len(name) == len("Retry-After") && bytes.EqualFold(name, []byte("Retry-After")) {
		s.retryAfter = string(value)
	}
}

// Header implements rawhttp.Handler.
func (s *rawState) Header(status int, rd rawhttp.Read) error {
	s.status, s.first, s.last = status, rd.At, rd.At
	s.firstBound, s.lastBound = bound(rd), bound(rd)
	return nil
}

// Body implements rawhttp.Handler: the body is read and dropped; its
// read's time is kept.
func (s *rawState) Body(_ []byte, rd rawhttp.Read) error {
	s.last, s.lastBound = rd.At, bound(rd)
	return nil
}

type rawPath struct {
	rc    *rawhttp.Client
	host  string
	base  string // path prefix of the base URL
	query string // query of the base URL, after every request's path
	pool  sync.Pool
	heads []byte // the configured headers, formatted
}

// newRawPath sets up the reactor path for an http:// base URL on a
// platform that has it; nil otherwise.
func newRawPath(cfg Config, addr string) (*rawPath, error) {
	u, err := url.Parse(cfg.BaseURL)
	if cfg.FastHTTP || err != nil || u.Scheme != "http" || !rawhttp.Available() {
		return nil, nil
	}
	// The engine passes its run's context to every request.
	rc, err := rawhttp.New(rawhttp.Config{Addr: addr, WatchContext: true, Tick: cfg.ReactorTick})
	if err != nil {
		return nil, fmt.Errorf("starting the reactor: %w", err)
	}
	p := &rawPath{rc: rc, host: u.Host, base: strings.TrimRight(u.EscapedPath(), "/"), query: u.RawQuery}
	p.pool.New = func() any { return &rawState{} }
	for k, vs := range cfg.Headers {
		for _, v := range vs {
			p.heads = append(p.heads, k...)
			p.heads = append(p.heads, ": "...)
			p.heads = append(p.heads, v...)
			p.heads = append(p.heads, "\r\n"...)
		}
	}
	if _, ok := cfg.Headers["User-Agent"]; !ok {
		p.heads = append(p.heads, "User-Agent: spate\r\n"...)
	}
	return p, nil
}

// doRaw is Do on the reactor path.
func (c *Client) doRaw(ctx context.Context, method, path string, body []byte, rec *record.Record) {
	p := c.raw
	st := p.pool.Get().(*rawState)
	defer p.pool.Put(st)
	st.status, st.first, st.last, st.retryAfter = 0, time.Time{}, time.Time{}, ""
	st.firstBound, st.lastBound = 0, 0
	target := p.base + path
	if p.query != "" {
		// The path (and its own query) before the target's query.
		pp, q, _ := strings.Cut(path, "?")
		if target = p.base + pp; target == "" {
			target = "/"
		}
		target += "?" + p.query
		if q != "" {
			target += "&" + q
		}
	}
	if target == "" {
		target = "/"
	}
	b := rawhttp.AppendHead(st.buf[:0], method, target, p.host, len(body))
	b = append(b, p.heads...)
	if c.cfg.TraceHeader {
		b = append(b, "Traceparent: "...)
		b = rec.AppendNewTrace(b)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	b = append(b, body...)
	st.buf = b
	// The timeout is the reactor's (Request.Timeout): a context with a
	// deadline per request cost more than a tenth of a request's CPU.
	res, err := p.rc.Do(ctx, &rawhttp.Request{Raw: b, Head: method == "HEAD", Handler: st, Timeout: c.cfg.Timeout, NextWaits: rec.ClosedLoop})
	if err == nil && !st.last.IsZero() {
		rec.End = st.last // the response's last bytes came then
		if st.firstBound > 0 || st.lastBound > 0 {
			// Without the kernel's receive time a late read's stamp is
			// late: the figures carry by how much at most. (A plain
			// request's read lag is kept only then: kernel-stamped, its
			// figures are exact, and a histogram insert a request is
			// not free at these rates.)
			rec.ReadLag, rec.EndBound = max(res.ReadLag, 1), st.lastBound
			rec.LateFirst, rec.FirstBound = st.firstBound > 0, st.firstBound
		}
	} else {
		rec.End = time.Now()
	}
	if !res.Written.IsZero() {
		rec.Written = res.Written
	}
	res.FillPhases(&rec.Phases)
	if !st.first.IsZero() {
		rec.FirstToken = st.first
		rec.Status = st.status
	}
	if err != nil {
		kind := classifyRaw(ctx, err)
		switch {
		case errors.Is(err, rawhttp.ErrMalformed):
			kind = record.BadResponse
		case st.first.IsZero() && (kind == record.RequestFailed || kind == record.StreamBroken):
			kind = record.ConnectReset // no response at all
		}
		rec.Fail(kind, err.Error(), rec.End)
		return
	}
	if rec.Status >= 400 {
		rec.Fail(record.HTTPStatus(rec.Status), fmt.Sprintf("HTTP %d", rec.Status), rec.End)
		rec.RetryAfter = openai.RetryAfter(rec.Status, st.retryAfter, rec.End)
	}
}

func classifyRaw(ctx context.Context, err error) record.ErrorKind {
	if errors.Is(err, rawhttp.ErrTimeout) {
		return record.Timeout
	}
	return classify(ctx, err)
}

// Close stops the reactor, if the Client has one, once every Do has
// returned.
func (c *Client) Close() error {
	if c.raw != nil {
		return c.raw.rc.Close()
	}
	return nil
}
