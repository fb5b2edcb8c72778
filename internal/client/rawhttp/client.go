package rawhttp

import (
	"errors"
	"net"
	"runtime"
	"strconv"
	"time"
)

// Config configures a Client.
type Config struct {
	// Addr is the server's host:port.
	Addr string
	// DialTimeout bounds a connect (0: 10 s).
	DialTimeout time.Duration
	// IdleConnTimeout closes a connection left idle that long (0: 90 s).
	IdleConnTimeout time.Duration
	// Reactors is the number of reactor goroutines (0: one per four
	// cores, at least one).
	Reactors int
	// Tick is the longest a reactor waits between collecting events when
	// they come faster than that, instead of waking for each (0:
	// DefaultTick, or MinTick with ReadStamps, where every event of a
	// read carries the read's own time; negative: never, a
	// wake per readiness). A reactor ticks at a quarter of the shortest
	// time between two reads of one stream it saw lately, within
	// [MinTick, Tick], so that a stream's events seldom share a read.
	// While no read leaves its call open (whole responses) it ticks at
	// Tick, unless a caller waits for its call's end to send again
	// (Request.NextWaits): then not at all.
	Tick time.Duration
	// Resolver looks the address's name up (nil: the system's resolver).
	Resolver *net.Resolver
	// WatchContext says Do's callers pass one context to many requests
	// (a run's): the Client then watches it, once, rather than each
	// request waiting on it too (see Client.Do). Contexts of one request
	// each are waited on by their request all the same: a watch that saw
	// a single request is not renewed.
	WatchContext bool
	// ReadStamps stamps each read with the time it returned, as on a
	// socket that gives no receive time, instead of asking the kernel for
	// its receive time (SO_TIMESTAMPNS).
	ReadStamps bool
}

// DefaultTick is Config.Tick's default. Each tick costs a wake-up, so a
// coarser one costs less CPU per token (bench/README.md). It moves no
// timestamp: each read carries the kernel's receive time, and the events
// of one stream that share a read with a later one of it are counted late
// (see Read.Bound), which the tick's adapting to the streams' pace keeps
// rare.
const DefaultTick = time.Millisecond

// MinTick is the shortest tick a reactor adapts to (see Config.Tick): a
// fifth of the 1 ms to which spate's figures are held at load.
const MinTick = 200 * time.Microsecond

func (c *Config) defaults() {
	if c.DialTimeout <= 0 {
		c.DialTimeout = 10 * time.Second
	}
	if c.IdleConnTimeout <= 0 {
		c.IdleConnTimeout = 90 * time.Second
	}
	if c.Reactors <= 0 {
		c.Reactors = max(1, runtime.GOMAXPROCS(0)/4)
	}
	switch {
	case c.Tick == 0 && c.ReadStamps:
		c.Tick = MinTick
	case c.Tick == 0:
		c.Tick = DefaultTick
	case c.Tick < 0:
		c.Tick = 0
	}
}

// Request is one request to send.
type Request struct {
	// Raw is the whole request as it goes on the wire: request line,
	// headers, blank line and body (see AppendHead).
	Raw []byte
	// Head says the request is HEAD, whose response has no body.
	Head bool
	// Handler receives the response.
	Handler Handler
	// IdleTimeout fails the request when no byte of the response arrives
	// for that long (0: no bound).
	IdleTimeout time.Duration
	// Timeout bounds the whole request, from Do to its response's end (0:
	// no bound but the context's): a request still running then fails
	// with an error that is ErrTimeout. It costs less than a context with
	// a deadline per request (no allocation, no registration with the
	// parent context).
	Timeout time.Duration
	// NextWaits says the caller sends its next request only once this
	// one has ended (a closed loop): while no stream is being read the
	// reactor then does not tick, and hands the end on at once. Whole
	// responses no caller waits on (an open loop's) are collected on the
	// tick, a wake-up a tick rather than one a response.
	NextWaits bool
}

// Result is what Do measured besides what the Handler saw.
type Result struct {
	// Written is when the last byte of the request was written.
	Written time.Time
	// ReadLag bounds how late the response's reads came after their data
	// was ready: the largest, over its reads, of the time from the latest
	// moment the reactor could last have seen the socket not ready to the
	// read (the kernel's wake-up latency, which every reader has, aside).
	ReadLag time.Duration
	// Reads is how many reads delivered the response; LateReads how many
	// of them had a lag bound over LateRead.
	Reads, LateReads int
	// Reused says the request went on a connection that had served
	// another.
	Reused bool
	// Dial is the phases of the connection opened for the request (its
	// zero value on a reused one).
	Dial DialTimes
	// Ready is when the connection was ready to carry the request (taken
	// from the pool, or opened).
	Ready time.Time
	// FirstByte is when the first byte of the response arrived (the
	// kernel's receive time where the socket gives it); zero when none
	// did.
	FirstByte time.Time
}

// DialTimes are the phases of opening a connection.
type DialTimes struct {
	// DNS is how long the name lookup took, when Lookup: a target given
	// as an IP address has none.
	DNS    time.Duration
	Lookup bool
	// Connect is how long the TCP connect took (0 when no connection was
	// opened).
	Connect time.Duration
}

// LateRead is the read lag over which Result counts a read as late: the
// 1 ms to which spate's figures are held.
const LateRead = time.Millisecond

// Errors of Do besides the Handler's and the network's.
var (
	// ErrIdleTimeout is a response that stalled for Request.IdleTimeout.
	ErrIdleTimeout = errors.New("no data from the server within the idle timeout")
	// ErrClosed is a Do on a closed Client.
	ErrClosed = errors.New("rawhttp: client closed")
	// ErrUnsupported is New on a platform without the reactor.
	ErrUnsupported = errors.New("rawhttp: not supported on this platform")
	// ErrTimeout is a request over its Request.Timeout.
	ErrTimeout = errors.New("request timed out")
)

// timeoutError is a failure caused by Request.Timeout that keeps the
// failure's own message (a dial's, say): it is both ErrTimeout and err.
type timeoutError struct{ err error }

func (e timeoutError) Error() string   { return e.err.Error() }
func (e timeoutError) Unwrap() []error { return []error{ErrTimeout, e.err} }

// AppendHead appends a request line and the headers every request needs
// (Host, Content-Length when there is a body) to b; the caller adds its
// own headers as "Name: value\r\n" lines, then "\r\n" and the body.
func AppendHead(b []byte, method, target, host string, bodyLen int) []byte {
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	if bodyLen > 0 || method == "POST" || method == "PUT" || method == "PATCH" {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(bodyLen), 10)
		b = append(b, "\r\n"...)
	}
	return b
}
