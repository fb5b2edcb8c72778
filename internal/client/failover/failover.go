// Package failover spreads requests over several upstreams of one service
// with the policies clients use in production: round-robin, failover to
// the next upstream on error, and retries with exponential backoff, jitter
// and a retry budget. It is an engine.Client over one engine.Client per
// upstream, so a failover can be exercised and measured.
//
// Stage: client (it wraps the protocol clients).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package failover

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spate-dev/spate/internal/engine"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
)

// Policy chooses the upstream of each attempt.
type Policy string

// Policies.
const (
	// RoundRobin sends each request to the next upstream in turn; a retry
	// goes to the one after.
	RoundRobin Policy = "round-robin"
	// Failover sends every request to the first upstream, and on an error
	// before any content to the next, in order.
	Failover Policy = "failover"
)

// ParsePolicy reads a policy name as given to --policy.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case RoundRobin, Failover:
		return p, nil
	}
	return "", fmt.Errorf("policy %q: use round-robin or failover", s)
}

// Upstream is one target of the service.
type Upstream struct {
	// Name identifies it in records (record.Record.Upstream); use a URL
	// without credentials.
	Name   string
	Client engine.Client
}

// Defaults of Config.
const (
	DefaultBackoff    = 100 * time.Millisecond
	DefaultMaxBackoff = 5 * time.Second
	DefaultBudget     = 0.2
	// DefaultMaxRetryAfter bounds the Retry-After a retry honours.
	DefaultMaxRetryAfter = time.Minute
)

// Config describes the client.
type Config struct {
	Upstreams []Upstream
	Policy    Policy
	// Retries is how many more times a failed request may be sent to an
	// upstream it was already sent to (round-robin: to the next one).
	// Under Failover, moving on to an upstream not yet tried is not a
	// retry: a request may be sent once to each upstream, then Retries
	// more times.
	Retries int
	// Backoff is the base wait before retry k (k from 1):
	// Backoff·2^(k−1), capped at MaxBackoff, with equal jitter (half of
	// it fixed, half drawn), or the response's Retry-After when that is
	// longer and the retry goes to the same upstream. Moving on to an
	// untried upstream waits not.
	Backoff, MaxBackoff time.Duration
	// Budget caps extra attempts (failovers and retries) at this fraction
	// of the requests sent so far, plus one: 0.2 allows 20 % more.
	Budget float64
	// AttemptTimeout, when > 0, gives up an attempt whose response has not
	// begun (no first byte) after this long, and counts it as a timeout:
	// the way to leave a black-holed upstream. A response that has begun
	// is never cut by it.
	AttemptTimeout time.Duration
	// Seed fixes the jitter draws.
	Seed uint64
	// MaxRetryAfter is the longest Retry-After a retry waits for
	// (default DefaultMaxRetryAfter): a response that asks for longer is
	// not retried.
	MaxRetryAfter time.Duration
}

// Client sends each request under the policy. Safe for concurrent use.
type Client struct {
	cfg      Config
	next     atomic.Uint64
	requests atomic.Int64
	extra    atomic.Int64
	denied   atomic.Int64
	sleep    func(ctx context.Context, d time.Duration) bool
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	if len(cfg.Upstreams) == 0 {
		return nil, errors.New("failover: no upstreams")
	}
	for i, u := range cfg.Upstreams {
		if u.Client == nil {
			return nil, fmt.Errorf("failover: upstream %d (%s) has no client", i, u.Name)
		}
	}
	if cfg.Policy == "" {
		cfg.Policy = RoundRobin
	}
	if _, err := ParsePolicy(string(cfg.Policy)); err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	switch {
	case cfg.Retries < 0:
		return nil, fmt.Errorf("failover: retries must be >= 0, got %d", cfg.Retries)
	case cfg.Backoff < 0 || cfg.MaxBackoff < 0 || cfg.AttemptTimeout < 0:
		return nil, errors.New("failover: backoff and attempt timeout must be >= 0")
	case math.IsNaN(cfg.Budget) || cfg.Budget < 0:
		return nil, fmt.Errorf("failover: budget must be >= 0, got %g", cfg.Budget)
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	return &Client{cfg: cfg, sleep: sleep}, nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Stats are the client's counts.
type Stats struct {
	Requests int64 // requests sent by the engine
	Extra    int64 // extra attempts made (failovers and retries)
	Denied   int64 // extra attempts the budget refused
}

// Stats returns the counts so far.
func (c *Client) Stats() Stats {
	return Stats{Requests: c.requests.Load(), Extra: c.extra.Load(), Denied: c.denied.Load()}
}

var errAttemptTimeout = errors.New("attempt timed out")

// Do implements engine.Client: it sends req to upstreams under the policy
// until an attempt succeeds, fails in a way that is not retried, or the
// attempts or budget run out. rec ends as the last attempt left it, with
// Sent still the first attempt's (so latency is what the user felt),
// Attempts the number of attempts and Upstream the last one's name.
func (c *Client) Do(ctx context.Context, req *workload.Request, rec *record.Record) {
	c.requests.Add(1)
	n := len(c.cfg.Upstreams)
	first := 0
	if c.cfg.Policy == RoundRobin {
		first = int((c.next.Add(1) - 1) % uint64(n))
	}
	maxAttempts := 1 + c.cfg.Retries
	if c.cfg.Policy == Failover {
		maxAttempts = n + c.cfg.Retries
	}
	keep := *rec // the engine's fields, restored before every retry
	retries := 0
	var notBefore []time.Time // per upstream, from its Retry-After
	var written time.Time     // when the first attempt was written
	for k := 0; ; k++ {
		u := c.cfg.Upstreams[(first+k)%n]
		c.attempt(ctx, u, req, rec)
		rec.Attempts, rec.Upstream = k+1, u.Name
		if k == 0 {
			written = rec.Written
		} else if !written.IsZero() {
			// Send delay is the first write's: a later attempt's would
			// count the earlier attempts as the server being slow to
			// accept.
			rec.Written = written
		}
		if k+1 >= maxAttempts || !retryable(ctx, rec) {
			return
		}
		// An upstream's Retry-After is the least wait before it is tried
		// again; a wait longer than MaxRetryAfter ends the retries.
		if rec.RetryAfter > 0 {
			if notBefore == nil {
				notBefore = make([]time.Time, n)
			}
			notBefore[(first+k)%n] = time.Now().Add(rec.RetryAfter)
		}
		var wait time.Duration
		if c.cfg.Policy == RoundRobin || k+1 >= n {
			wait = c.backoff(rec.Seq, retries+1)
		}
		if notBefore != nil {
			ra := time.Until(notBefore[(first+k+1)%n])
			if ra > c.cfg.MaxRetryAfter {
				return
			}
			wait = max(wait, ra)
		}
		if !c.spend() {
			return
		}
		if c.cfg.Policy == RoundRobin || k+1 >= n {
			retries++
		}
		if !c.sleep(ctx, wait) {
			return
		}
		attempts := k + 1
		trace, span, prior := rec.TraceID, rec.SpanID, rec.PriorSpans
		rec.Reset()
		restore(rec, &keep)
		rec.Attempts = attempts
		if trace != ([16]byte{}) {
			// The next attempt is a new span of the same trace: the
			// logical request's, which its record carries with every
			// attempt's span.
			rec.TraceID, rec.SpanID, rec.PriorSpans = trace, [8]byte{}, append(prior, span)
		}
	}
}

// restore puts back the fields the engine set before calling Do.
func restore(rec, keep *record.Record) {
	rec.Seq, rec.Warmup, rec.Intended, rec.SlotWait, rec.Sent, rec.Intent = keep.Seq, keep.Warmup, keep.Intended, keep.SlotWait, keep.Sent, keep.Intent
	rec.TraceID, rec.SpanID = keep.TraceID, keep.SpanID
}

// attempt sends one attempt to u. The attempt timeout runs until the
// first byte of the response: a stream that has begun is never cut by it.
func (c *Client) attempt(ctx context.Context, u Upstream, req *workload.Request, rec *record.Record) {
	if c.cfg.AttemptTimeout <= 0 {
		u.Client.Do(ctx, req, rec)
		return
	}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t := time.AfterFunc(c.cfg.AttemptTimeout, func() { cancel(errAttemptTimeout) })
	defer t.Stop()
	actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{GotFirstResponseByte: func() { t.Stop() }})
	u.Client.Do(actx, req, rec)
	if rec.Err == record.Cancelled && ctx.Err() == nil && errors.Is(context.Cause(actx), errAttemptTimeout) {
		rec.Err = record.Timeout
		rec.ErrMsg = fmt.Sprintf("no response from %s within the %v attempt timeout", u.Name, c.cfg.AttemptTimeout)
	}
}

// spend takes one extra attempt from the budget, if it has one.
func (c *Client) spend() bool {
	for {
		e := c.extra.Load()
		if float64(e+1) > c.cfg.Budget*float64(c.requests.Load())+1 {
			c.denied.Add(1)
			return false
		}
		if c.extra.CompareAndSwap(e, e+1) {
			return true
		}
	}
}

// backoff is the wait before retry k (from 1) of request seq.
func (c *Client) backoff(seq uint64, k int) time.Duration {
	d := float64(c.cfg.Backoff) * math.Pow(2, float64(k-1))
	d = min(d, float64(c.cfg.MaxBackoff))
	u := float64(mix64(c.cfg.Seed^mix64(seq<<8|uint64(k&0xff)))>>11) / (1 << 53)
	return time.Duration(d/2 + u*d/2)
}

func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// retryable reports whether a failed attempt may be sent again: it failed
// before any content reached the user, with a connection failure, a
// timeout, a 5xx or a 429, and the run is not stopping.
func retryable(ctx context.Context, rec *record.Record) bool {
	if !rec.Failed() || ctx.Err() != nil || !rec.FirstToken.IsZero() || rec.Chunks > 0 || len(rec.Answer) > 0 {
		return false
	}
	switch rec.Err {
	case record.Connect, record.ConnectReset, record.Timeout, record.RateLimited, record.StreamBroken, record.RequestFailed:
		return true
	}
	return strings.HasPrefix(string(rec.Err), "http_5")
}
