// Package plainhttp is spate's protocol client for any HTTP service
// (--api http): it sends the workload's method, path and body and measures
// time to first byte in place of time to first token.
package plainhttp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"time"

	"github.com/spate-dev/spate/openai"
	"github.com/spate-dev/spate/record"
	"github.com/spate-dev/spate/workload"
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
	// Timeout bounds a whole request (0: none).
	Timeout time.Duration
	HTTP    *http.Client
}

// Client sends plain HTTP requests. It is safe for concurrent use.
type Client struct {
	cfg  Config
	base string
	http *http.Client
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("target %q is not an http(s) URL such as http://127.0.0.1:8080", openai.Redact(cfg.BaseURL))
	}
	if cfg.Method == "" {
		cfg.Method = http.MethodGet
		if len(cfg.Body) > 0 {
			cfg.Method = http.MethodPost
		}
	}
	c := &Client{cfg: cfg, base: strings.TrimRight(cfg.BaseURL, "/"), http: cfg.HTTP}
	if c.http == nil {
		c.http = &http.Client{Transport: openai.NewTransport()}
	}
	return c, nil
}

// Check dials the target, so that an unreachable one fails fast.
func (c *Client) Check(ctx context.Context) error {
	u, _ := url.Parse(c.base)
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return fmt.Errorf("target %s is unreachable: %w", openai.Redact(c.base), err)
	}
	return conn.Close()
}

// Do implements engine.Client. TTFT is the time to the first byte of the
// response; E2E is to its last byte.
func (c *Client) Do(ctx context.Context, req *workload.Request, rec *record.Record) {
	method, path, body := c.cfg.Method, c.cfg.Path, c.cfg.Body
	if req.Method != "" {
		method = req.Method
	}
	if req.Path != "" {
		path = req.Path
	}
	if req.Body != nil {
		body = req.Body
	}
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	trace := &httptrace.ClientTrace{
		WroteRequest:         func(httptrace.WroteRequestInfo) { rec.Written = time.Now() },
		GotFirstResponseByte: func() { rec.FirstToken = time.Now() },
	}
	var rd io.Reader
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), method, c.base+path, rd)
	if err != nil {
		rec.Fail(record.RequestFailed, err.Error(), time.Now())
		return
	}
	for k, v := range c.cfg.Headers {
		hreq.Header[k] = v
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		rec.Fail(classify(ctx, err), err.Error(), time.Now())
		return
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	rec.End = time.Now()
	rec.Status = resp.StatusCode
	if err != nil {
		rec.Fail(classify(ctx, err), "reading response: "+err.Error(), rec.End)
		return
	}
	if resp.StatusCode >= 400 {
		rec.Fail(record.HTTPStatus(resp.StatusCode), fmt.Sprintf("HTTP %d", resp.StatusCode), rec.End)
	}
}

func classify(ctx context.Context, err error) record.ErrorKind {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return record.Timeout
	case ctx.Err() != nil:
		return record.Cancelled
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return record.Connect
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return record.Timeout
	}
	return record.StreamBroken
}
