package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a fault-injecting HTTP reverse proxy in front of one upstream.
// Requests to /admin/faults and /admin/stats are its admin API (see
// admin.go); every other request is forwarded to the upstream, with the
// faults its draws give. Responses stream through unbuffered: every read
// from the upstream is written and flushed at once.
type Proxy struct {
	upstream  *url.URL
	transport *http.Transport
	now       func() time.Time

	cur  atomic.Pointer[applied]
	seq  atomic.Uint64
	reqs atomic.Int64
	fwd  atomic.Int64
	held atomic.Int64
	inj  [numKinds]atomic.Int64

	mu      sync.Mutex
	windows []Window

	done      chan struct{}
	closeOnce sync.Once
}

// applied is a fault set in force since at.
type applied struct {
	set   Set
	rules []Rule // with defaults filled
	at    time.Time
	first int // index in Proxy.windows of its first rule's window
}

// Window is when one rule of a fault set was in force. End is zero while
// it still is.
type Window struct {
	// Rule is the rule's index in the set's Rules().
	Rule int `json:"rule"`
	// Faults describes the rule (its JSON without from and until).
	Faults string    `json:"faults"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end,omitzero"`
	// Failing is true when the rule can fail requests by itself (errors,
	// rate limits, resets, black-holes, truncations).
	Failing bool `json:"failing"`
}

// New returns a proxy to upstream (scheme://host[:port][/prefix]; the
// prefix is put before every forwarded path), with no faults set.
func New(upstream string) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, fmt.Errorf("chaos proxy upstream %q: %w", upstream, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("chaos proxy upstream %q: want http://host:port or https://host:port", upstream)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = 1024
	tr.DisableCompression = true
	tr.ForceAttemptHTTP2 = false
	return &Proxy{upstream: u, transport: tr, now: time.Now, done: make(chan struct{})}, nil
}

// Close releases requests held by black-holes and idle upstream
// connections. It does not stop the server that serves the proxy.
func (p *Proxy) Close() {
	p.closeOnce.Do(func() { close(p.done) })
	p.transport.CloseIdleConnections()
}

// Apply replaces the fault set; its rules' windows start now.
func (p *Proxy) Apply(s Set) error {
	if err := s.Validate(); err != nil {
		return err
	}
	now := p.now()
	rules := s.Rules()
	a := &applied{set: s, at: now, rules: make([]Rule, len(rules))}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeWindows(now)
	a.first = len(p.windows)
	for i, r := range rules {
		a.rules[i] = r.withDefaults()
		w := Window{Rule: i, Faults: describe(r), Start: now.Add(time.Duration(r.From)), Failing: failing(r)}
		if r.Until > 0 {
			w.End = now.Add(time.Duration(r.Until))
		}
		p.windows = append(p.windows, w)
	}
	p.cur.Store(a)
	return nil
}

// Clear removes the fault set.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeWindows(p.now())
	p.cur.Store(nil)
}

// closeWindows ends the current set's windows at now, dropping those that
// had not begun. p.mu is held.
func (p *Proxy) closeWindows(now time.Time) {
	a := p.cur.Load()
	if a == nil {
		return
	}
	kept := p.windows[:a.first]
	for _, w := range p.windows[a.first:] {
		if !w.Start.Before(now) {
			continue
		}
		if w.End.IsZero() || w.End.After(now) {
			w.End = now
		}
		kept = append(kept, w)
	}
	p.windows = kept
}

// Current returns the fault set in force and when it was applied (zero
// Set and time when none).
func (p *Proxy) Current() (Set, time.Time) {
	if a := p.cur.Load(); a != nil {
		return a.set, a.at
	}
	return Set{}, time.Time{}
}

func describe(r Rule) string {
	r.From, r.Until = 0, 0
	b, _ := json.Marshal(r)
	return string(b)
}

func failing(r Rule) bool {
	return r.ErrorRate > 0 || r.RateLimitRate > 0 || r.ResetRate > 0 || r.BlackholeRate > 0 || r.TruncateRate > 0
}

// ServeHTTP serves the admin API and forwards everything else.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/admin/faults":
		p.serveFaults(w, r)
		return
	case "/admin/stats":
		p.serveStats(w, r)
		return
	}
	// The body is read whole first: once the response starts, an HTTP/1
	// server may no longer read it (and a transport still sending it
	// would break the upstream connection); and a black-holed handler
	// only learns that the client gave up once the body is consumed.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "chaos proxy: reading the request body: "+err.Error(), "bad_request")
		return
	}
	if exempt(r) {
		p.forward(w, r, body, &decision{truncAfter: -1, stallAfter: -1}, false)
		return
	}
	p.reqs.Add(1)
	seq := p.seq.Add(1) - 1
	var d decision
	if a := p.cur.Load(); a != nil {
		d = decide(a.rules, a.set.Seed, seq, p.now().Sub(a.at))
	} else {
		d = decision{truncAfter: -1, stallAfter: -1}
	}
	if d.latency > 0 {
		p.inj[KindLatency].Add(1)
	}
	if d.spike > 0 {
		p.inj[KindSpike].Add(1)
	}
	if wait := d.latency + d.spike; wait > 0 && !p.sleep(r.Context(), wait) {
		return
	}
	switch d.reject {
	case rejectError:
		p.inj[KindError].Add(1)
		writeServerError(w, d.status, d.retryAfter)
		return
	case rejectRateLimit:
		p.inj[KindRateLimit].Add(1)
		writeRateLimited(w, d.retryAfter)
		return
	case rejectReset:
		p.inj[KindReset].Add(1)
		resetConn(w)
		return
	case rejectBlackhole:
		p.inj[KindBlackhole].Add(1)
		p.held.Add(1)
		defer p.held.Add(-1)
		select {
		case <-r.Context().Done():
		case <-p.done:
		}
		return
	}
	p.forward(w, r, body, &d, true)
}

// exempt reports whether r is a model listing or health probe, which is
// forwarded without faults and not counted: clients ask for them before
// a run, and failing them tests nothing a user does.
func exempt(r *http.Request) bool {
	return r.Method == http.MethodGet && (strings.HasSuffix(r.URL.Path, "/models") || r.URL.Path == "/health")
}

// sleep waits d, or until the client gives up or the proxy closes.
func (p *Proxy) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-p.done:
	}
	return false
}

// hopHeaders are not forwarded (RFC 9110 §7.6.1).
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// maxRequestBody bounds a forwarded request's body, read whole first.
const maxRequestBody = 256 << 20

func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, body []byte, d *decision, count bool) {
	out := r.Clone(r.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	out.RequestURI = ""
	u := *p.upstream
	u.Path = p.upstream.Path + r.URL.Path
	u.RawPath = ""
	u.RawQuery = r.URL.RawQuery
	out.URL = &u
	out.Host = p.upstream.Host
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	if len(body) == 0 {
		out.Body, out.GetBody = nil, nil
	}
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		if r.Context().Err() == nil {
			writeError(w, http.StatusBadGateway, "chaos proxy: upstream "+p.upstream.Host+": "+err.Error(), "upstream_error")
		}
		return
	}
	defer resp.Body.Close()
	if count {
		p.fwd.Add(1)
	}
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if !sse {
		d.truncAfter, d.stallAfter, d.drip = -1, -1, 0
	}
	if d.streamFaults() {
		h.Del("Content-Length")
	}
	w.WriteHeader(resp.StatusCode)
	fl, _ := w.(http.Flusher)
	if fl != nil {
		fl.Flush()
	}
	if !d.streamFaults() {
		copyFlush(w, fl, resp.Body)
		return
	}
	c := faultCopier{p: p, w: w, fl: fl, d: d, ctx: r.Context()}
	if d.bandwidth > 0 {
		p.inj[KindBandwidth].Add(1)
	}
	if sse && (d.truncAfter >= 0 || d.stallAfter >= 0 || d.drip > 0) {
		c.events(resp.Body)
	} else {
		c.bytes(resp.Body)
	}
}

// writeError writes an OpenAI-shaped error.
func writeError(w http.ResponseWriter, status int, msg, code string) {
	typ := "server_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "requests"
	case status < 500:
		typ = "invalid_request_error"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func writeServerError(w http.ResponseWriter, status int, retryAfter time.Duration) {
	if status == http.StatusServiceUnavailable {
		w.Header().Set("retry-after", strconv.Itoa(retrySeconds(retryAfter)))
	}
	writeError(w, status, "The server had an error while processing your request (injected by spate chaos proxy).", "server_error")
}

func retrySeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

func writeRateLimited(w http.ResponseWriter, ra time.Duration) {
	h := w.Header()
	h.Set("retry-after", strconv.Itoa(retrySeconds(ra)))
	h.Set("retry-after-ms", strconv.FormatInt(ra.Milliseconds(), 10))
	h.Set("x-ratelimit-limit-requests", "10000")
	h.Set("x-ratelimit-limit-tokens", "2000000")
	h.Set("x-ratelimit-remaining-requests", "0")
	h.Set("x-ratelimit-remaining-tokens", "0")
	h.Set("x-ratelimit-reset-requests", ra.String())
	h.Set("x-ratelimit-reset-tokens", ra.String())
	writeError(w, http.StatusTooManyRequests, "Rate limit reached for requests (injected by spate chaos proxy). Please try again in "+ra.String()+".", "rate_limit_exceeded")
}

// resetConn closes the client's connection with a TCP RST and no response.
func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// errAborted ends a response mid-stream on purpose.
var errAborted = errors.New("stream cut by the chaos proxy")

// Serve serves p on ln until ctx is done, then shuts the server down,
// releasing black-holed requests first. It returns nil after a clean stop.
func Serve(ctx context.Context, ln net.Listener, p *Proxy) error {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	p.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		srv.Close()
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
