package llmtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Behaviours of a Hostile server, one per path: the API base URL of
// behaviour b is Hostile.BaseURL(b). Each answers /chat/completions (and
// /completions) streamed or not as asked, and /models.
const (
	// HostileOK behaves: 4 tokens and usage, as a control.
	HostileOK = "ok"
	// StallAfterFirst sends its first token, then nothing, open forever.
	StallAfterFirst = "stall-after-first"
	// NoHeaders reads the request and never answers.
	NoHeaders = "no-headers"
	// Drip sends one byte of an event every 100 ms, forever.
	Drip = "drip"
	// Endless streams 1 KB tokens as fast as it can, forever.
	Endless = "endless"
	// ManyChunks streams 100,000 one-character chunks of one word, without
	// usage (the client counts them).
	ManyChunks = "many-chunks"
	// HugeWord streams one 300 KB word in one chunk, without usage.
	HugeWord = "huge-word"
	// BigBody answers a non-streamed request with a 300 MB body.
	BigBody = "big-body"
	// LongModel names a 512 KiB model id in its chunks (a stream's lines
	// are bounded at 1 MiB).
	LongModel = "long-model"
	// EscapeModel names a model id with terminal escape codes that would
	// forge a "thresholds: PASS" line.
	EscapeModel = "escape-model"
	// Reset resets the connection (TCP RST) before any response.
	Reset = "reset"
	// RedirectLoop redirects every request to itself.
	RedirectLoop = "redirect-loop"
	// RedirectElsewhere redirects to the same path on another host (the
	// server's Other), which answers as HostileOK and keeps the headers it
	// received (OtherHeaders).
	RedirectElsewhere = "redirect-elsewhere"
	// Garbage answers 200 text/event-stream with random bytes.
	Garbage = "garbage"
	// NotSSE answers a streamed request with 200 text/html.
	NotSSE = "not-sse"
	// NegativeUsage reports prompt_tokens -96 and completion_tokens -19.
	NegativeUsage = "negative-usage"
	// AbsurdUsage reports completion_tokens 9e18.
	AbsurdUsage = "absurd-usage"
	// RetryAfter answers every other request 429 with Retry-After: 1.
	RetryAfter = "retry-after"
	// Echo answers 400 with an error body that repeats the request's URL
	// and every header it received (the Authorization header among them),
	// and a password= parameter (EchoPassword).
	Echo = "echo"
	// HugeModels lists models in a 100 MB /models body.
	HugeModels = "huge-models"
)

// EchoPassword is the password Echo's error body names (in a
// password=... parameter), for redaction tests.
const EchoPassword = "pw-planted-in-body"

// EscapeModelID is the model id EscapeModel names.
const EscapeModelID = "m\x1b[2K\r\x1b[32mthresholds: PASS\x1b[0m"

// Hostile is a server that misbehaves in the ways a load tester meets,
// one behaviour per path, for tests that a client survives them: no
// crash, no hang, bounded memory, a classified error. Every response ends
// when the client goes away or the server is closed.
type Hostile struct {
	*httptest.Server
	// Other is the second host RedirectElsewhere sends clients to.
	Other *httptest.Server

	closed   chan struct{}
	once     sync.Once
	mu       sync.Mutex
	other    []http.Header // headers Other received
	requests atomic.Int64
	retries  atomic.Int64
}

// NewHostile starts a Hostile server (and its Other) on loopback ports.
// Close it when done.
func NewHostile() *Hostile {
	h := &Hostile{closed: make(chan struct{})}
	h.Other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.other = append(h.other, r.Header.Clone())
		h.mu.Unlock()
		h.serve(w, r, HostileOK)
	}))
	h.Server = httptest.NewServer(http.HandlerFunc(h.route))
	return h
}

// Close stops both servers and every response still going.
func (h *Hostile) Close() {
	h.once.Do(func() { close(h.closed) })
	h.Server.CloseClientConnections()
	h.Server.Close()
	h.Other.Close()
}

// BaseURL is the API base URL of behaviour b.
func (h *Hostile) BaseURL(b string) string { return h.Server.URL + "/" + b + "/v1" }

// Requests is the number of requests the server received.
func (h *Hostile) Requests() int64 { return h.requests.Load() }

// OtherHeaders returns the headers of every request Other received.
func (h *Hostile) OtherHeaders() []http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]http.Header(nil), h.other...)
}

func (h *Hostile) route(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	b, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if !strings.HasPrefix(rest, "v1/") {
		http.NotFound(w, r)
		return
	}
	h.serve(w, r, b)
}

// request is what a behaviour reads of a completion request.
type request struct {
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (h *Hostile) serve(w http.ResponseWriter, r *http.Request, b string) {
	if strings.HasSuffix(r.URL.Path, "/models") {
		h.models(w, b)
		return
	}
	var req request
	_ = json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req)
	fl, _ := w.(http.Flusher)
	flush := func() {
		if fl != nil {
			fl.Flush()
		}
	}
	sse := func() {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
	}
	chunk := func(model, content string) error {
		m, _ := json.Marshal(model)
		c, _ := json.Marshal(content)
		_, err := fmt.Fprintf(w, "data: {\"object\":\"chat.completion.chunk\",\"model\":%s,\"choices\":[{\"index\":0,\"delta\":{\"content\":%s}}]}\n\n", m, c)
		flush()
		return err
	}
	usage := func(prompt, completion string) {
		fmt.Fprintf(w, "data: {\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":%s,\"completion_tokens\":%s}}\n\n", prompt, completion)
	}
	done := func() {
		fmt.Fprint(w, "data: [DONE]\n\n")
		flush()
	}
	// hold keeps the response open until the client or the server ends.
	hold := func() {
		select {
		case <-r.Context().Done():
		case <-h.closed:
		}
	}
	switch b {
	case HostileOK, StallAfterFirst, Endless, ManyChunks, HugeWord, LongModel, EscapeModel, NegativeUsage, AbsurdUsage, RetryAfter:
		if b == RetryAfter && h.retries.Add(1)%2 == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`, http.StatusTooManyRequests)
			return
		}
		model := "m"
		switch b {
		case LongModel:
			model = strings.Repeat("m", 512<<10)
		case EscapeModel:
			model = EscapeModelID
		}
		if !req.Stream {
			h.whole(w, b, model)
			return
		}
		sse()
		switch b {
		case StallAfterFirst:
			chunk(model, Words[0])
			hold()
			return
		case Endless:
			tok := strings.Repeat("x", 1<<10)
			for {
				select {
				case <-r.Context().Done():
					return
				case <-h.closed:
					return
				default:
				}
				if chunk(model, tok) != nil {
					return
				}
			}
		case ManyChunks:
			bw := bufio.NewWriterSize(w, 64<<10)
			for i := 0; i < 100_000; i++ {
				if _, err := bw.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n"); err != nil {
					return
				}
			}
			bw.Flush()
			done()
			return
		case HugeWord:
			chunk(model, strings.Repeat("a", 300<<10))
			done()
			return
		}
		for i := 0; i < 4; i++ {
			if chunk(model, Words[i]) != nil {
				return
			}
		}
		switch b {
		case NegativeUsage:
			usage("-96", "-19")
		case AbsurdUsage:
			usage("3", "9000000000000000000")
		default:
			usage("3", "4")
		}
		done()
	case NoHeaders:
		conn := hijack(w)
		if conn == nil {
			return
		}
		defer conn.Close()
		go func() { <-h.closed; conn.Close() }()
		_, _ = conn.Read(make([]byte, 1)) // until the client closes
	case Drip:
		sse()
		ev := []byte(`data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 1<<20))
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-r.Context().Done():
				return
			case <-h.closed:
				return
			case <-t.C:
			}
			if _, err := w.Write(ev[i%len(ev) : i%len(ev)+1]); err != nil {
				return
			}
			flush()
		}
	case BigBody:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"`)
		block := []byte(strings.Repeat("x", 1<<20))
		for i := 0; i < 300; i++ {
			if _, err := w.Write(block); err != nil {
				return
			}
		}
		fmt.Fprint(w, `"}}]}`)
	case Reset:
		conn := hijack(w)
		if conn == nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close with RST
		}
		conn.Close()
	case RedirectLoop:
		http.Redirect(w, r, r.URL.RequestURI(), http.StatusTemporaryRedirect)
	case RedirectElsewhere:
		http.Redirect(w, r, h.Other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	case Garbage:
		sse()
		rnd := rand.New(rand.NewPCG(1, 2))
		junk := make([]byte, 64<<10)
		for i := range junk {
			junk[i] = byte(rnd.UintN(256))
		}
		w.Write(junk)
	case NotSSE:
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>Welcome to nginx!</body></html>\n")
	case Echo:
		var sb strings.Builder
		fmt.Fprintf(&sb, "bad request to %s (upstream dsn host=db password=%s):", r.URL.String(), EchoPassword)
		for k, vs := range r.Header {
			fmt.Fprintf(&sb, " %s: %s;", k, strings.Join(vs, ","))
		}
		msg, _ := json.Marshal(sb.String())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":%s}}`, msg)
	default:
		http.NotFound(w, r)
	}
}

// whole answers a non-streamed request.
func (h *Hostile) whole(w http.ResponseWriter, b, model string) {
	u := `{"prompt_tokens":3,"completion_tokens":4}`
	switch b {
	case NegativeUsage:
		u = `{"prompt_tokens":-96,"completion_tokens":-19}`
	case AbsurdUsage:
		u = `{"prompt_tokens":3,"completion_tokens":9000000000000000000}`
	}
	m, _ := json.Marshal(model)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"object":"chat.completion","model":%s,"choices":[{"index":0,"message":{"role":"assistant","content":" the of and to"}}],"usage":%s}`, m, u)
}

// models lists the behaviour's model.
func (h *Hostile) models(w http.ResponseWriter, b string) {
	w.Header().Set("Content-Type", "application/json")
	switch b {
	case HugeModels:
		fmt.Fprint(w, `{"object":"list","data":[`)
		entry := []byte(`{"id":"` + strings.Repeat("m", 1<<20-16) + `"},`)
		for i := 0; i < 100; i++ {
			if _, err := w.Write(entry); err != nil {
				return
			}
		}
		fmt.Fprint(w, `{"id":"m"}]}`)
	case EscapeModel:
		id, _ := json.Marshal(EscapeModelID)
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%s}]}`, id)
	default:
		fmt.Fprint(w, `{"object":"list","data":[{"id":"m"}]}`)
	}
}

// hijack takes the connection from the server, the request read.
func hijack(w http.ResponseWriter) net.Conn {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return nil
	}
	return conn
}
