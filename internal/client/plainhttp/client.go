// Package plainhttp is spate's protocol client for any HTTP service
// (--api http): it sends the workload's method, path and body and measures
// time to first byte in place of time to first token.
//
// It is built on fasthttp rather than net/http: one goroutine and fewer
// system calls per request let one core drive about twice the requests
// (bench/wrk-compare.sh measures it against wrk).
//
// Stage: client.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package plainhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/internal/workload"
)

// Config configures a Client.
type Config struct {
	// BaseURL is prefixed to every request's path.
	BaseURL string
	// Method, Path and Body are used when a request does not set its own.
	Method string
	Path   string
	Body   []byte
	// Headers are added to every request (e.g. Content-Type, Authorization).
	Headers http.Header
	// Timeout bounds a whole request (default 10 minutes).
	Timeout time.Duration
	// TraceHeader sends a W3C traceparent header with a fresh trace on
	// every request, kept in the record.
	TraceHeader bool
	// FastHTTP sends with fasthttp even where the reactor (package
	// rawhttp) could: it is used for http:// targets on Linux.
	FastHTTP bool
	// ReactorTick is rawhttp.Config.Tick for the reactor path (0: its
	// default).
	ReactorTick time.Duration
}

// Client sends plain HTTP requests. It is safe for concurrent use.
type Client struct {
	cfg   Config
	base  string
	query bool   // the target has a query string
	host  string // host:port to dial
	fc    *fasthttp.Client
	conns conns

	watchMu sync.Mutex
	watched atomic.Value // <-chan struct{} of the context watched

	raw *rawPath // the reactor path, nil when fasthttp is used
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("target %q is not an http(s) URL such as http://127.0.0.1:8080", scrub.URL(cfg.BaseURL))
	}
	for k, vs := range cfg.Headers {
		for _, v := range vs {
			if strings.ContainsAny(k+v, "\r\n\x00") {
				return nil, fmt.Errorf("header %q: a header is one line: no CR, LF or NUL", k)
			}
		}
	}
	if cfg.Method == "" {
		cfg.Method = http.MethodGet
		if len(cfg.Body) > 0 {
			cfg.Method = http.MethodPost
		}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	c := &Client{cfg: cfg, base: strings.TrimRight(cfg.BaseURL, "/"), host: host, query: u.RawQuery != "" || u.Fragment != ""}
	c.conns.m, c.conns.stamped = map[*conn]struct{}{}, map[net.Addr]*rawhttp.StampedConn{}
	c.fc = &fasthttp.Client{
		MaxConnsPerHost: 1 << 20,
		// A load tester never retries behind the user's back.
		MaxIdemponentCallAttempts:     1,
		StreamResponseBody:            true,
		NoDefaultUserAgentHeader:      true,
		DisableHeaderNamesNormalizing: true,
		DisablePathNormalizing:        true,
		ReadBufferSize:                16 << 10,
		Dial:                          c.dial,
	}
	if c.raw, err = newRawPath(cfg, host); err != nil {
		return nil, err
	}
	return c, nil
}

// Check dials the target, so that an unreachable one fails fast.
func (c *Client) Check(ctx context.Context) error {
	d := net.Dialer{Timeout: 10 * time.Second}
	cn, err := d.DialContext(ctx, "tcp", c.host)
	if err != nil {
		return fmt.Errorf("target %s is unreachable: %w", scrub.URL(c.base), err)
	}
	return cn.Close()
}

// conns tracks open connections, so that cancelling a run can abort the
// requests in flight (fasthttp takes no context), and finds a response's
// connection, when its reads are stamped, by its local address.
type conns struct {
	mu      sync.Mutex
	m       map[*conn]struct{}
	stamped map[net.Addr]*rawhttp.StampedConn
}

type conn struct {
	net.Conn
	owner *conns
	once  sync.Once
}

func (c *conn) Close() error {
	c.once.Do(func() {
		c.owner.mu.Lock()
		delete(c.owner.m, c)
		delete(c.owner.stamped, c.LocalAddr())
		c.owner.mu.Unlock()
	})
	return c.Conn.Close()
}

// find returns the stamped connection whose local address is addr (the
// same net.Addr its LocalAddr returns), nil when there is none.
func (cs *conns) find(addr net.Addr) *rawhttp.StampedConn {
	if addr == nil {
		return nil
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.stamped[addr]
}

// dial opens a connection whose reads are stamped, where they can be
// (rawhttp.Stamp): the response's first and last bytes are then stamped
// when they arrived, not when fasthttp's reads returned.
func (c *Client) dial(addr string) (net.Conn, error) {
	nc, err := fasthttp.DialTimeout(addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	nc = rawhttp.Stamp(nc)
	cn := &conn{Conn: nc, owner: &c.conns}
	c.conns.mu.Lock()
	c.conns.m[cn] = struct{}{}
	if sc, ok := nc.(*rawhttp.StampedConn); ok {
		c.conns.stamped[sc.LocalAddr()] = sc
	}
	c.conns.mu.Unlock()
	return cn, nil
}

// watch arranges for ctx's end to close every connection. A run passes the
// same context to every request, so this registers once per run, not once
// per request (which would contend on the context's lock).
func (c *Client) watch(ctx context.Context) {
	done := ctx.Done()
	if done == nil {
		return
	}
	if w, _ := c.watched.Load().(<-chan struct{}); w == done {
		return
	}
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if w, _ := c.watched.Load().(<-chan struct{}); w == done {
		return
	}
	c.watched.Store(done)
	context.AfterFunc(ctx, c.closeAll)
}

// closeAll closes every open connection, failing the requests on them.
func (c *Client) closeAll() {
	c.conns.mu.Lock()
	all := make([]*conn, 0, len(c.conns.m))
	for cn := range c.conns.m {
		all = append(all, cn)
	}
	c.conns.mu.Unlock()
	for _, cn := range all {
		cn.Close()
	}
}

// Do implements engine.Client. TTFT is the time until the response's
// headers have arrived (its first bytes); E2E is to its last byte.
func (c *Client) Do(ctx context.Context, req *workload.Request, rec *record.Record) {
	method, path, body := c.cfg.Method, c.cfg.Path, c.cfg.Body
	if req.Method != "" {
		method = req.Method
	}
	if req.Path != "" {
		path = req.Path
	}
	if len(req.Body) > 0 {
		body = req.Body
	}
	if c.raw != nil {
		c.doRaw(ctx, method, path, body, rec)
		return
	}
	c.watch(ctx)

	hreq := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(hreq)
	defer fasthttp.ReleaseResponse(resp)
	if c.query {
		hreq.SetRequestURI(openai.Endpoint(c.cfg.BaseURL, path)) // the path before the target's query
	} else {
		hreq.SetRequestURI(c.base + path)
	}
	hreq.Header.SetMethod(method)
	if c.cfg.TraceHeader {
		hreq.Header.Set("traceparent", rec.NewTrace())
	}
	for k, vs := range c.cfg.Headers {
		for _, v := range vs {
			hreq.Header.Add(k, v)
		}
	}
	if len(body) > 0 {
		hreq.SetBodyRaw(body)
	}
	err := c.fc.DoTimeout(hreq, resp, c.cfg.Timeout)
	if err != nil {
		kind := classify(ctx, err)
		if kind == record.StreamBroken || kind == record.RequestFailed && reset(err) {
			kind = record.ConnectReset // no response at all
		}
		rec.Fail(kind, err.Error(), time.Now())
		return
	}
	rec.FirstToken = time.Now()
	sc := c.conns.find(resp.LocalAddr())
	var first rawhttp.Read
	if sc != nil {
		if first = sc.Last(); first.At.IsZero() {
			sc = nil // no read stamped: the times are the reads' own
		} else {
			rec.FirstToken = first.At
		}
	}
	rec.Status = resp.StatusCode()
	if s := resp.BodyStream(); s != nil {
		_, err = io.Copy(io.Discard, s)
		resp.CloseBodyStream()
	}
	rec.End = time.Now()
	if sc != nil {
		stampEnd(rec, first, sc.Last(), sc.Lag())
	}
	if err != nil {
		rec.Fail(classify(ctx, err), "reading response: "+err.Error(), rec.End)
		return
	}
	if rec.Status >= 400 {
		rec.Fail(record.HTTPStatus(rec.Status), fmt.Sprintf("HTTP %d", rec.Status), rec.End)
		rec.RetryAfter = openai.RetryAfter(rec.Status, string(resp.Header.Peek("Retry-After")), rec.End)
	}
}

// stampEnd stamps rec's end with last, the last read of its response
// (first, the one that completed its headers, stamps its first byte), and
// gives it the bounds of either read that came late without the kernel's
// receive time, as the reactor path does; lag is the response's read lag.
func stampEnd(rec *record.Record, first, last rawhttp.Read, lag time.Duration) {
	rec.End = last.At
	late := func(rd rawhttp.Read) time.Duration {
		if rd.Kernel || rd.Bound <= rawhttp.LateRead {
			return 0
		}
		return rd.Bound
	}
	if fb, eb := late(first), late(last); fb > 0 || eb > 0 {
		rec.ReadLag, rec.EndBound = max(lag, 1), eb
		rec.LateFirst, rec.FirstBound = fb > 0, fb
	}
}

// reset reports a connection reset by the peer.
func reset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func classify(ctx context.Context, err error) record.ErrorKind {
	if ctx.Err() != nil {
		return record.Cancelled
	}
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout):
		return record.Timeout
	case errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return record.StreamBroken
	}
	if record.OutOfFiles(err) {
		return record.LocalFileLimit // this machine's limit, not the target's
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return record.Connect
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return record.Timeout
	}
	return record.RequestFailed
}
