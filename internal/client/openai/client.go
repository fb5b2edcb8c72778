// Package openai is spate's protocol client for OpenAI-compatible servers:
// /v1/chat/completions, /v1/completions and /v1/embeddings, streamed or not,
// and the ranking APIs /v1/rerank and /v1/score (rank.go).
// It reads server-sent events with its own reader (package sse), stamps
// every event with its arrival time, and fills a record.Record; it knows
// nothing of schedules or figures.
//
// Stage: client.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fastjson"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/client/sse"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/internal/workload/tokenizer"
	"github.com/spate-dev/spate/result"
)

// APIs a Client speaks.
const (
	Chat        = "chat"
	Completions = "completions"
	Embeddings  = "embeddings"
	// Rerank ranks documents against a query: /rerank (Cohere, Jina, vLLM).
	Rerank = "rerank"
	// Score scores query–document pairs: vLLM's /score.
	Score = "score"
)

// Config configures a Client.
type Config struct {
	// BaseURL is the API root, e.g. http://127.0.0.1:8000/v1.
	BaseURL string
	API     string // Chat, Completions or Embeddings
	Model   string
	// APIKey is sent as a bearer token. It is never logged or recorded.
	APIKey string
	// Stream asks for a streamed response (ignored for embeddings).
	Stream bool
	// IgnoreEOS asks the server to generate exactly max_tokens (vLLM,
	// SGLang); OpenAI itself rejects the field.
	IgnoreEOS bool
	// Timeout bounds a whole request (0: none).
	Timeout time.Duration
	// IdleTimeout bounds the silence between two reads of a streamed
	// response (0: none); a stalled stream fails with record.Timeout. A
	// whole (non-streamed) response is silent until it is done: Timeout
	// bounds it.
	IdleTimeout time.Duration
	// MaxLine bounds one SSE line (0: sse.DefaultMaxLine).
	MaxLine int
	// Tokenizer counts output tokens when the server reports no usage, and
	// on every TokenizerSample-th request to check usage against it.
	Tokenizer       tokenizer.Counter
	TokenizerSample int
	// Headers are added to every request.
	Headers http.Header
	// TraceHeader sends a W3C traceparent header with a fresh trace id and
	// span id on every request, kept in the record (record.Record.TraceID).
	TraceHeader bool
	// HTTP is the client to send with (nil: a Client tuned for load, see
	// NewTransport).
	HTTP *http.Client
	// NetHTTP sends requests with net/http even where the reactor
	// (package rawhttp) could read them; it is used for every request to
	// an http:// target when HTTP is nil, on Linux.
	NetHTTP bool
	// ReactorTick is rawhttp.Config.Tick for the reactor path (0: its
	// default).
	ReactorTick time.Duration
	// MaxText bounds the text of one response kept for the tokenizer and
	// answer checks (0: DefaultMaxText); MaxBody a non-streamed response
	// (0: DefaultMaxBody); MaxModelID the model id a response names (0:
	// DefaultMaxModelID); MaxModelList the /models listing (0:
	// DefaultMaxModelList). Over one, a request fails with record.TooLarge.
	MaxText, MaxBody, MaxModelID, MaxModelList int64
	// Logprobs asks every request for that many top logprobs a token (0:
	// none; a request's own workload.Request.Logprobs wins), read into the
	// record's entropy fields (see logprobs.go).
	Logprobs int
}

// Client sends OpenAI API requests. It is safe for concurrent use.
type Client struct {
	cfg      Config
	endpoint string
	http     *http.Client
	pool     sync.Pool // *stream
	// raw is the reactor path's client, nil when net/http is used.
	raw       *rawhttp.Client
	rawTarget rawTarget
	h2        h2Probe // whether the target speaks HTTP/2 only
	// listing is what the last model listing's answer said of the
	// server (Server).
	listing atomic.Pointer[result.ServerInfo]
}

// NewTransport returns an HTTP transport for load generation: no
// connection limit, many idle connections, no transparent compression
// (which would hide when bytes arrive).
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy: nil,
		// Reads stamped by the connection (see stamped.go).
		DialContext:         rawhttp.StampDial((&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext),
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: 100000,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		TLSHandshakeTimeout: 10 * time.Second,
		WriteBufferSize:     16 << 10,
		ReadBufferSize:      16 << 10,
	}
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("target %q is not an http(s) URL such as http://127.0.0.1:8000/v1", scrub.URL(cfg.BaseURL))
	}
	path := map[string]string{Chat: "/chat/completions", Completions: "/completions", Embeddings: "/embeddings", Rerank: "/rerank", Score: "/score", Responses: "/responses"}[cfg.API]
	if path == "" {
		return nil, fmt.Errorf("api %q: use chat, completions, responses, embeddings, rerank or score", cfg.API)
	}
	if ranked(cfg.API) {
		cfg.Stream = false // not streamed
	}
	for k, vs := range cfg.Headers {
		for _, v := range vs {
			if strings.ContainsAny(k+v, "\r\n\x00") {
				return nil, fmt.Errorf("header %q: a header is one line: no CR, LF or NUL", k)
			}
		}
	}
	c := &Client{cfg: cfg, endpoint: Endpoint(cfg.BaseURL, path), http: cfg.HTTP}
	if c.http == nil {
		c.http = &http.Client{Transport: NewTransport(), CheckRedirect: checkRedirect(cfg.Headers)}
	}
	c.pool.New = func() any { return &stream{} }
	if c.raw, c.rawTarget, err = newRaw(cfg, c.endpoint); err != nil {
		return nil, err
	}
	return c, nil
}

// Endpoint returns the URL of path under the API base URL: the path goes
// before the base's query (http://h/v1?api-version=1 and /chat/completions
// give http://h/v1/chat/completions?api-version=1).
// A path with its own query adds it after the base's.
func Endpoint(base, path string) string {
	u, err := url.Parse(base)
	if err != nil || u.RawQuery == "" && u.Fragment == "" {
		return strings.TrimRight(base, "/") + path
	}
	p, q, _ := strings.Cut(path, "?")
	u.Fragment, u.RawFragment = "", ""
	u.RawPath = strings.TrimRight(u.EscapedPath(), "/") + p
	if dec, err := url.PathUnescape(u.RawPath); err == nil {
		u.Path = dec
	}
	if q != "" {
		u.RawQuery += "&" + q
	}
	return u.String()
}

// maxRedirects is how many redirects a request follows before it fails
// with record.RedirectLoop.
const maxRedirects = 5

// errRedirectLoop is a request redirected more than maxRedirects times.
var errRedirectLoop = fmt.Errorf("redirected more than %d times", maxRedirects)

// checkRedirect is the redirect policy: at most maxRedirects, and on a
// redirect to another host none of the configured headers (custom key
// headers such as X-Api-Key or api-key among them) is sent there;
// net/http already drops Authorization and cookies there.
func checkRedirect(own http.Header) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return errRedirectLoop
		}
		if req.URL.Host != via[0].URL.Host {
			for k := range own {
				req.Header.Del(k)
			}
			req.Header.Del("Authorization")
		}
		return nil
	}
}

// stream is the per-request parsing state, pooled.
type stream struct {
	sse    sse.Reader
	parser fastjson.Parser
	ev     sse.Event
	text   []byte    // output text, for the tokenizer
	bounds []int     // end offset in text of each content-bearing event
	events int       // events read (bad_response when a stream has none)
	last   time.Time // the last content-bearing event's arrival
	// The reactor path's state (see reactor.go): streamed says the
	// response is read as events, else its body is kept whole in body.
	streamed bool
	body     []byte
	push     sse.Parser
	raw      []byte
	status   int
	errb     []byte
	done     bool
	rec      *record.Record
	keep     bool
	last2    time.Time // the last read's stamp
	// late counts the response's late stamps (see Body).
	late rawhttp.Late
	// lastBound is how much earlier than last2 the last read's bytes may
	// have come, when that stamp is the read's own and not the kernel's
	// (0 otherwise): rec.EndBound when the response ends with that read.
	lastBound time.Duration
	// The net/http path's connection, when its reads are stamped (see
	// stamped.go), the read of its last body read, and stampedClock as
	// an sse.Clock; records says the connection is TLS, whose body reads
	// are numbered in bodyReads.
	sc        *rawhttp.StampedConn
	rd        rawhttp.Read
	clock     sse.Clock
	records   bool
	bodyReads int
	c         *Client
	emit      func(*sse.Event) error
	skim      chunkSkim
	tmpl      chunkTemplate
	trace     *httptrace.ClientTrace // the request context's hooks
	// retryAfter and location are header fields of the reactor path's
	// response (see Field).
	retryAfter string
	location   bool
	encoding   string     // Content-Encoding
	ent        entropyAcc // the answer's token entropies
}

type chatBody struct {
	Model string `json:"model"`
	// Messages is nil, a []textMessage (every message's content is text)
	// or a []workload.Message (see wireMessages).
	Messages      any             `json:"messages,omitempty"`
	Prompt        *string         `json:"prompt,omitempty"`
	Input         *string         `json:"input,omitempty"`
	MaxTokens     int             `json:"max_tokens,omitempty"`
	Stream        bool            `json:"stream,omitempty"`
	StreamOptions *streamOptions  `json:"stream_options,omitempty"`
	IgnoreEOS     bool            `json:"ignore_eos,omitempty"`
	Tools         json.RawMessage `json:"tools,omitempty"`
	User          string          `json:"user,omitempty"`
	Temperature   *float64        `json:"temperature,omitempty"`
	TopP          *float64        `json:"top_p,omitempty"`
	Logprobs      any             `json:"logprobs,omitempty"`
	TopLogprobs   *int            `json:"top_logprobs,omitempty"`
}

// textMessage is a chat message whose content is text, encoded as
// workload.Message.MarshalJSON encodes it. encoding/json re-scans and
// compacts what a MarshalJSON returns, which for a 1,024-token prompt
// cost more than the stream's reading (3,500 instructions per streamed
// token of 128, bench/callgrind-stream.sh); a plain struct is encoded once.
type textMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// wireMessages is what chatBody.Messages holds for ms: text messages as
// textMessages, ms itself when one has parts (its MarshalJSON writes
// them).
func wireMessages(ms []workload.Message) any {
	tm := make([]textMessage, len(ms))
	for i, m := range ms {
		if len(m.Parts) > 0 {
			return ms
		}
		tm[i] = textMessage{Role: m.Role, Content: m.Content}
	}
	return tm
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Body returns the JSON body Do sends for req: req.Body as it is when the
// workload gives a whole body, else one built from its fields.
func (c *Client) Body(req *workload.Request) ([]byte, error) {
	if len(req.Body) > 0 {
		return req.Body, nil
	}
	if ranked(c.cfg.API) {
		return c.rankBody(req)
	}
	if c.cfg.API == Responses {
		return c.responsesRequest(req)
	}
	b := chatBody{Model: c.cfg.Model, User: req.Session}
	switch c.cfg.API {
	case Embeddings:
		p := req.Prompt
		b.Input = &p
		return json.Marshal(b)
	case Chat:
		if len(req.Messages) == 0 {
			b.Messages = []textMessage{{Role: "user", Content: req.Prompt}}
		} else {
			b.Messages = wireMessages(req.Messages)
		}
		b.Tools = req.Tools
	case Completions:
		p := req.Prompt
		if p == "" && len(req.Messages) > 0 {
			p = req.Messages[len(req.Messages)-1].Content
		}
		b.Prompt = &p
	}
	b.MaxTokens = req.MaxTokens
	b.IgnoreEOS = c.cfg.IgnoreEOS && req.MaxTokens > 0 && !req.StopFree
	b.Temperature, b.TopP = req.Temperature, req.TopP
	if req.Model != "" {
		b.Model = req.Model // an intent's model (a LoRA adapter)
	}
	n := c.cfg.Logprobs
	if req.Logprobs != 0 {
		n = req.Logprobs
	}
	b.Logprobs, b.TopLogprobs = logprobsFields(c.cfg.API, n)
	if c.cfg.Stream {
		b.Stream = true
		b.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if out, ok := b.appendPlain(make([]byte, 0, b.plainSize())); ok {
		return out, nil
	}
	return json.Marshal(b)
}

type causeKey struct{}

var (
	errStalled = errors.New("no data from the server within the idle timeout")
	errTimeout = errors.New("request timed out")
)

// Do implements engine.Client.
func (c *Client) Do(ctx context.Context, req *workload.Request, rec *record.Record) {
	body, err := c.Body(req)
	if err != nil {
		rec.Fail(record.RequestFailed, "encoding request: "+err.Error(), time.Now())
		return
	}
	if !ranked(c.cfg.API) {
		rec.RequestedOutput = req.MaxTokens
		rec.ExactOutput = c.cfg.IgnoreEOS && req.MaxTokens > 0 && len(req.Body) == 0 && !req.StopFree
		// The prompt's known length until the server's usage says
		// otherwise: a request refused for its length (an HTTP 400) keeps
		// it, and lands in its bucket of the context curve, not 0–512.
		rec.InputTokens = req.InputTokens
	}
	if c.raw != nil && c.doRaw(ctx, req, rec, body) {
		return
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if c.cfg.Timeout > 0 {
		t := time.AfterFunc(c.cfg.Timeout, func() { cancel(errTimeout) })
		defer t.Stop()
	}
	var idle *time.Timer
	if c.cfg.IdleTimeout > 0 && c.streamed() {
		idle = time.AfterFunc(c.cfg.IdleTimeout, func() { cancel(errStalled) })
		defer idle.Stop()
	}
	// WroteRequest runs on the transport's writer goroutine, which Do does
	// not wait for: hand the time over atomically, as an offset from Sent.
	var written atomic.Int64
	pt := &phaseTrace{sent: rec.Sent}
	defer func() {
		if d := written.Load(); d > 0 {
			rec.Written = rec.Sent.Add(time.Duration(d))
		}
		pt.fill(&rec.Phases)
	}()
	st := c.pool.Get().(*stream)
	defer func() {
		st.rec, st.sc = nil, nil
		c.pool.Put(st)
	}()
	st.reset(rec)
	trace := pt.hooks(func(t int64) { written.Store(t) }, st.gotConn)
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		rec.Fail(record.RequestFailed, err.Error(), time.Now())
		return
	}
	hreq.Header.Set("Content-Type", "application/json")
	c.setIdentity(hreq.Header)
	if c.streamed() {
		hreq.Header.Set("Accept", "text/event-stream")
	}
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	if c.cfg.TraceHeader {
		hreq.Header["Traceparent"] = []string{rec.NewTrace()}
	}
	for k, v := range c.cfg.Headers {
		hreq.Header[k] = v
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		kind, msg := classify(ctx, err)
		if kind == record.StreamBroken || kind == record.RequestFailed && reset(err) {
			// No response at all: the connection died before headers.
			kind = record.ConnectReset
		}
		kind, msg = c.asHTTP2Only(err, kind, msg)
		rec.Fail(kind, msg, time.Now())
		return
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		rec.Fail(record.HTTPStatus(resp.StatusCode), statusMessage(resp.StatusCode, snippet), time.Now())
		rec.RetryAfter = RetryAfter(resp.StatusCode, resp.Header.Get("Retry-After"), time.Now())
		return
	}
	if err := c.encodingError(resp.Header.Get("Content-Encoding")); err != nil {
		kind, msg := classify(ctx, err)
		rec.Fail(kind, msg, time.Now())
		return
	}
	var src io.Reader = resp.Body
	if idle != nil {
		src = idleReader{r: resp.Body, t: idle, d: c.cfg.IdleTimeout}
	}
	switch {
	case c.streamed():
		err = c.readStream(st, src, rec, req.KeepAnswer)
	default:
		err = c.readWhole(st, src, rec, req)
	}
	if st.sc != nil {
		rec.ReadLag = max(st.sc.Lag(), st.late.Bound, 1) // measured, even when it rounds to 0
	}
	if err != nil {
		kind, msg := classify(ctx, err)
		if kind == record.RequestFailed {
			kind = record.StreamBroken
		}
		rec.Fail(kind, msg, time.Now())
		return
	}
	if idle != nil {
		idle.Stop() // the response is read: what is left is local work
	}
	c.finish(ctx, st, req, rec)
	if st.sc != nil {
		st.endBound(rec, c.streamed())
	}
}

// idleReader resets the idle timer on every read.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (i idleReader) Read(p []byte) (int, error) {
	n, err := i.r.Read(p)
	if n > 0 {
		i.t.Reset(i.d)
	}
	return n, err
}

// statusMessage is the message of an HTTP error: the status and the
// start of the body, its control characters escaped (a server's text is
// printed).
func statusMessage(status int, body []byte) string {
	return fmt.Sprintf("HTTP %d: %s", status, scrub.Text(string(bytes.TrimSpace(body)), 300))
}

// RetryAfter reads a Retry-After header (seconds, or an HTTP date after
// now) of a 429 or 503 response; 0 when there is none or it does not
// parse.
func RetryAfter(status int, v string, now time.Time) time.Duration {
	if v == "" || status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return 0
	}
	if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
		if n <= 0 || n > 1e6 || n != n {
			return 0
		}
		return time.Duration(n * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// reset reports a connection reset by the peer.
func reset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// classify maps a transport error to an error kind and a message.
func classify(ctx context.Context, err error) (record.ErrorKind, string) {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errTimeout), errors.Is(cause, errStalled), errors.Is(cause, record.ErrDrained):
		return record.Timeout, cause.Error()
	case cause != nil:
		return record.Cancelled, "cancelled: the run was stopping"
	}
	if record.OutOfFiles(err) {
		return record.LocalFileLimit, "this machine ran out of file descriptors (" + err.Error() + "): the load generator's limit, not the target's"
	}
	if kind, msg, ok := kindOf(err); ok {
		return kind, msg
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return record.Connect, err.Error()
	}
	if errors.Is(err, errRedirectLoop) {
		return record.RedirectLoop, err.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return record.Timeout, err.Error()
	}
	if errors.Is(err, sse.ErrLineTooLong) {
		return record.StreamBroken, err.Error()
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return record.StreamBroken, "connection closed mid-response: " + err.Error()
	}
	return record.RequestFailed, err.Error()
}

// errNoDone is a stream that ended without its [DONE] event.
var errNoDone = errors.New("stream ended without data: [DONE]")

// readStream reads an SSE response into rec; keep keeps the answer text
// in rec.Answer.
func (c *Client) readStream(st *stream, body io.Reader, rec *record.Record, keep bool) error {
	st.sse.Reset(body, c.cfg.MaxLine, st.stampedClock())
	st.last = time.Time{}
	for {
		if err := st.sse.Next(&st.ev); err != nil {
			if err == io.EOF {
				return endOfStream(c, st, st.sse.Stray())
			}
			return err
		}
		before := rec.Chunks
		done, err := c.event(st, st.ev.Data, st.ev.At, rec, keep)
		if st.sc != nil {
			for e := before; e < rec.Chunks; e++ {
				st.lateStamp(e, st.rd)
			}
		}
		if done || err != nil {
			return err
		}
	}
}

// event takes one server-sent event's data, which arrived at at, into rec;
// done is the stream's [DONE].
func (c *Client) event(st *stream, data []byte, at time.Time, rec *record.Record, keep bool) (done bool, err error) {
	st.events++
	if len(data) == 6 && string(data) == "[DONE]" {
		rec.End = at
		return true, nil
	}
	var reasoning, answer bool
	if c.cfg.API == Responses {
		var done bool
		if reasoning, answer, done, err = c.responsesEvent(st, data, rec, keep); err != nil {
			return false, err
		}
		if done {
			rec.End = at
			return true, nil
		}
	} else if st.tmpl.read(data, &st.skim) {
		// The common chunk, read in one pass (see skim.go) or by the
		// stream's last one (template.go).
		if err := c.model(rec, st.skim.model); err != nil {
			return false, err
		}
		setFinish(rec, st.skim.finish)
		for _, p := range st.skim.parts {
			if len(p.answer) > 0 {
				answer = true
				st.text = append(st.text, p.answer...)
				if keep {
					rec.Answer = append(rec.Answer, p.answer...)
				}
			}
			if len(p.reasoning) > 0 {
				reasoning = true
				st.text = append(st.text, p.reasoning...)
			}
		}
	} else if reasoning, answer, err = c.parseEvent(st, data, rec, keep); err != nil {
		return false, err
	}
	if !reasoning && !answer {
		return false, nil // role-only, empty and usage-only chunks are not tokens
	}
	if err := c.checkText(st); err != nil {
		return false, err
	}
	if rec.FirstToken.IsZero() {
		rec.FirstToken = at
	} else {
		rec.Gaps = append(rec.Gaps, at.Sub(st.last))
	}
	st.last = at
	if reasoning && rec.FirstReasoning.IsZero() {
		rec.FirstReasoning = at
	}
	if answer && rec.FirstAnswer.IsZero() {
		rec.FirstAnswer = at
	}
	rec.Chunks++
	st.bounds = append(st.bounds, len(st.text))
	return false, nil
}

// parseEvent reads an event's JSON in full (fastjson): what skim leaves.
func (c *Client) parseEvent(st *stream, data []byte, rec *record.Record, keep bool) (reasoning, answer bool, err error) {
	v, err := st.parser.ParseBytes(data)
	if err != nil {
		return false, false, failure(record.BadResponse, "bad event data %s: %s", scrub.Text(string(data), 80), err)
	}
	if msg, ok := errorOf(v); ok {
		return false, false, fmt.Errorf("error event: %s", msg)
	}
	if err := c.model(rec, v.GetStringBytes("model")); err != nil {
		return false, false, err
	}
	if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		if err := readUsage(u, rec); err != nil {
			return false, false, err
		}
	}
	for _, ch := range v.GetArray("choices") {
		setFinish(rec, ch.GetStringBytes("finish_reason"))
		st.ent.readLogprobs(ch.Get("logprobs"))
		d := ch.Get("delta")
		if d == nil {
			// /v1/completions chunks carry text directly.
			if t := ch.GetStringBytes("text"); len(t) > 0 {
				answer = true
				st.text = append(st.text, t...)
				if keep {
					rec.Answer = append(rec.Answer, t...)
				}
			}
			continue
		}
		if t := d.GetStringBytes("content"); len(t) > 0 {
			answer = true
			st.text = append(st.text, t...)
			if keep {
				rec.Answer = append(rec.Answer, t...)
			}
		}
		if t := d.GetStringBytes("reasoning_content"); len(t) > 0 {
			reasoning = true
			st.text = append(st.text, t...)
		} else if t := d.GetStringBytes("reasoning"); len(t) > 0 {
			reasoning = true
			st.text = append(st.text, t...)
		}
		if tc := d.GetArray("tool_calls"); len(tc) > 0 {
			answer = true
			for _, call := range tc {
				name := call.GetStringBytes("function", "name")
				if len(name) > 0 {
					rec.ToolCalls++ // a call's name comes in its first delta
				}
				st.text = append(st.text, name...)
				st.text = append(st.text, call.GetStringBytes("function", "arguments")...)
				if keep {
					rec.Answer = append(rec.Answer, call.GetStringBytes("function", "arguments")...)
				}
			}
		}
	}
	return reasoning, answer, nil
}

// setFinish keeps a choice's finish_reason (the last one sent wins).
func setFinish(rec *record.Record, reason []byte) {
	if len(reason) > 0 && string(reason) != rec.FinishReason {
		rec.FinishReason = string(reason)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Defaults of Config's limits.
const (
	DefaultMaxText = 4 << 20
	DefaultMaxBody = 64 << 20
)

// readWhole reads a non-streamed response (a whole answer, a rerank or a
// score) into rec.
func (c *Client) readWhole(st *stream, body io.Reader, rec *record.Record, req *workload.Request) error {
	b, err := io.ReadAll(io.LimitReader(body, c.maxBody()+1))
	if err != nil {
		return err
	}
	rec.End = time.Now()
	if st.sc != nil {
		rec.End = st.stamp()
	}
	if err := c.bodySize(len(b)); err != nil {
		return err
	}
	return c.parseWhole(st, b, rec, req)
}

// parseWhole reads non-streamed response body b, which ended at rec.End,
// into rec: a rerank or score as such, else as a whole answer.
func (c *Client) parseWhole(st *stream, b []byte, rec *record.Record, req *workload.Request) error {
	if ranked(c.cfg.API) {
		return c.rankedBody(st, b, rec, req)
	}
	return c.whole(st, b, rec, req.KeepAnswer)
}

// bodySize fails a non-streamed response body of n bytes that is over the
// responseBody limit (a body is read up to one byte over it).
func (c *Client) bodySize(n int) error {
	if limit := c.maxBody(); int64(n) > limit {
		return failure(record.TooLarge, "the response body is over the responseBody limit of %d bytes (raise it with --limit responseBody=SIZE)", limit)
	}
	return nil
}

// whole reads non-streamed response body b, which ended at rec.End, into
// rec; keep keeps the answer text in rec.Answer.
func (c *Client) whole(st *stream, b []byte, rec *record.Record, keep bool) error {
	v, err := st.parser.ParseBytes(b)
	if err != nil {
		return failure(record.BadResponse, "bad response body %s: %s", scrub.Text(string(b), 80), err)
	}
	if c.cfg.API == Responses {
		return c.readResponsesWhole(st, v, rec, keep)
	}
	if msg, ok := errorOf(v); ok {
		// An error where the answer was due, with a 200: the server's
		// message, not "the response carried no generated content".
		return failure(record.BadResponse, "the server answered with an error: %s", msg)
	}
	if err := c.model(rec, v.GetStringBytes("model")); err != nil {
		return err
	}
	if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		if err := readUsage(u, rec); err != nil {
			return err
		}
	}
	if c.cfg.API == Embeddings {
		if len(v.GetArray("data")) == 0 {
			return errors.New("embeddings response has no data")
		}
		rec.FirstToken = rec.End
		return nil
	}
	for _, ch := range v.GetArray("choices") {
		setFinish(rec, ch.GetStringBytes("finish_reason"))
		st.ent.readLogprobs(ch.Get("logprobs"))
		ans := len(st.text)
		st.text = append(st.text, ch.GetStringBytes("text")...)
		st.text = append(st.text, ch.GetStringBytes("message", "content")...)
		if keep {
			rec.Answer = append(rec.Answer, st.text[ans:]...)
		}
		if r := ch.GetStringBytes("message", "reasoning_content"); len(r) > 0 {
			st.text = append(st.text, r...)
			rec.FirstReasoning = rec.End
		}
		for _, call := range ch.GetArray("message", "tool_calls") {
			rec.ToolCalls++
			st.text = append(st.text, call.GetStringBytes("function", "name")...)
			st.text = append(st.text, call.GetStringBytes("function", "arguments")...)
			if keep {
				rec.Answer = append(rec.Answer, call.GetStringBytes("function", "arguments")...)
			}
		}
	}
	if err := c.checkText(st); err != nil {
		return err
	}
	if len(st.text) > 0 {
		// The whole answer arrives at once: its first token is its end.
		rec.FirstToken, rec.FirstAnswer = rec.End, rec.End
		rec.Chunks = 1
		st.bounds = append(st.bounds, len(st.text))
	}
	return nil
}

// maxChunkCounts bounds the chunks of one response counted one by one.
const maxChunkCounts = 1 << 16

// finish settles token counts and empty output once a response is read.
// Counting tokens is part of the request's work: it gives up when ctx
// ends (the request's timeout, or the run stopping), failing the request
// as that says.
func (c *Client) finish(ctx context.Context, st *stream, req *workload.Request, rec *record.Record) {
	if req.Model != "" {
		// An intent's own model (an adapter of a mix): the request's
		// "model" label names it; the run's provenance stays the target's.
		rec.Model = ""
	}
	if c.cfg.API == Embeddings || ranked(c.cfg.API) {
		if rec.InputTokens == 0 {
			rec.InputTokens = req.InputTokens
		}
		return
	}
	st.ent.fill(rec)
	if rec.Chunks == 0 {
		rec.Fail(record.EmptyOutput, "the response carried no generated content", rec.End)
		return
	}
	if rec.InputTokens == 0 {
		rec.InputTokens = req.InputTokens
	}
	tok := c.cfg.Tokenizer
	// A remote counter (--tokenizer server) asks the server's tokenize
	// endpoint: its failure leaves the count unknown, not the request failed.
	_, remote := tok.(interface{ Remote() bool })
	sample := c.cfg.TokenizerSample > 0 && rec.Seq%uint64(c.cfg.TokenizerSample) == 0
	if tok != nil && (rec.UsageTokens < 0 || sample) {
		n, err := tokenizer.CountContext(ctx, tok, string(st.text))
		switch {
		case err != nil && remote && ctx.Err() == nil:
		case err != nil:
			kind, msg := classify(ctx, err)
			rec.Fail(kind, msg+" (while counting the response's tokens)", time.Now())
			return
		default:
			rec.TokenizerTokens = n
		}
	}
	switch {
	case rec.UsageTokens >= 0:
		rec.OutputTokens, rec.OutputSource = rec.UsageTokens, record.TokensUsage
	case rec.TokenizerTokens >= 0:
		rec.OutputTokens, rec.OutputSource = rec.TokenizerTokens, record.TokensTokenizer
	default:
		rec.OutputTokens, rec.OutputSource = rec.Chunks, record.TokensNone
	}
	// Tokens per chunk: one each when the counts agree; otherwise count
	// each chunk's text when a tokenizer is at hand, for up to
	// maxChunkCounts chunks (a count costs a few µs: a stream of millions
	// of one-byte chunks would outlast its timeout).
	// A remote counter would send a request a chunk: its chunks are left
	// uncounted.
	if rec.OutputTokens != rec.Chunks && tok != nil && !remote && c.cfg.Stream && len(st.bounds) <= maxChunkCounts {
		prev := 0
		for i, end := range st.bounds {
			if i%256 == 255 && ctx.Err() != nil {
				kind, msg := classify(ctx, ctx.Err())
				rec.Fail(kind, msg+" (while counting the response's tokens)", time.Now())
				return
			}
			rec.ChunkTokens = append(rec.ChunkTokens, int32(tok.Count(string(st.text[prev:end]))))
			prev = end
		}
	}
}
