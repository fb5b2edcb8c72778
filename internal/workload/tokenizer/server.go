package tokenizer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spate-dev/spate/internal/scrub"
)

// ServerName is the --tokenizer value that counts in the target's own
// tokens through its tokenize endpoint; "server:URL" names the endpoint.
const ServerName = "server"

// IsServer reports whether a --tokenizer value asks for the server's
// tokenizer ("server" or "server:URL").
func IsServer(name string) bool {
	return name == ServerName || strings.HasPrefix(name, ServerName+":")
}

// CheckServerName checks a "server" or "server:URL" value without asking
// anyone (spate validate).
func CheckServerName(name string) error {
	u, ok := strings.CutPrefix(name, ServerName+":")
	if !ok {
		return nil
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("tokenizer %q: server:URL wants the http(s) URL of a tokenize endpoint, e.g. server:http://127.0.0.1:8080/tokenize", scrub.URL(name))
	}
	return nil
}

// ServerConfig is what a Server needs.
type ServerConfig struct {
	// Name is the --tokenizer value: "server" (find the endpoint at the
	// target's root) or "server:URL".
	Name string
	// Target is the run's --target (its /v1 is stripped to find the root).
	Target string
	// Model is sent to endpoints that take one (vLLM).
	Model string
	// APIKey, when set, is sent as a bearer token; Headers are sent too.
	APIKey  string
	Headers http.Header
	// Timeout bounds each tokenize request (0: DefaultServerTimeout).
	Timeout time.Duration
	// HTTP sends the requests (nil: a client of its own).
	HTTP *http.Client
}

// DefaultServerTimeout bounds one tokenize request.
const DefaultServerTimeout = 10 * time.Second

// maxTokenizeBody bounds a tokenize answer read (a 100k-token prompt's
// ids are under 1 MB).
const maxTokenizeBody = 32 << 20

// shape is one known request shape of a tokenize endpoint.
type shape struct {
	name string
	body func(text, model string) any
}

// shapes are the request shapes tried, in order: llama.cpp's (content;
// no BOS unless add_special) and vLLM's (prompt; add_special_tokens false
// so that neither counts BOS).
var shapes = []shape{
	{"llama.cpp", func(text, _ string) any { return map[string]any{"content": text} }},
	{"vLLM", func(text, model string) any {
		m := map[string]any{"prompt": text, "add_special_tokens": false}
		if model != "" {
			m["model"] = model
		}
		return m
	}},
}

// Server counts tokens with the target's own tokenizer, through its
// tokenize endpoint. It caches counts by text and counts the requests it
// sends; it is safe for concurrent use.
type Server struct {
	cfg      ServerConfig
	ctx      context.Context // the run's: Count's requests end with it
	endpoint string
	shape    shape
	requests atomic.Int64

	mu    sync.Mutex
	cache map[string]int
}

// serverCache bounds the counts a Server keeps.
const serverCache = 4096

// DialServer finds the tokenize endpoint (cfg.Name's URL, or /tokenize at
// the target's root in llama.cpp's shape, then vLLM's) with one small
// request per try, and returns a Server that uses it. ctx bounds the
// tries and, later, every count made without a context of its own.
func DialServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultServerTimeout
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{}
	}
	if err := CheckServerName(cfg.Name); err != nil {
		return nil, err
	}
	endpoint, named := strings.CutPrefix(cfg.Name, ServerName+":")
	if !named {
		root, err := rootOf(cfg.Target)
		if err != nil {
			return nil, err
		}
		endpoint = root + "/tokenize"
	}
	s := &Server{cfg: cfg, ctx: ctx, endpoint: endpoint, cache: map[string]int{}}
	var tried []string
	for _, sh := range shapes {
		s.shape = sh
		ids, err := s.tokenize(ctx, "Hello world")
		if err == nil && len(ids) > 0 {
			return s, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("finding the tokenize endpoint of %s: %w", scrub.URL(cfg.Target), ctx.Err())
		}
		if err == nil {
			err = errors.New("no tokens for a text of two words")
		}
		tried = append(tried, fmt.Sprintf("%s's shape: %v", sh.name, err))
	}
	return nil, fmt.Errorf("the target %s has no tokenize endpoint spate knows: tried POST %s in %s; "+
		"count with a local tokenizer instead (--tokenizer cl100k_base, o200k_base, llama3 or the path of the model's tokenizer.json), "+
		"or name the endpoint with --tokenizer server:URL",
		scrub.URL(cfg.Target), scrub.URL(endpoint), strings.Join(tried, "; "))
}

// rootOf is a target URL with its /v1 (and trailing slash) stripped.
func rootOf(target string) (string, error) {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("--tokenizer server needs the --target URL to find the tokenize endpoint at; %q is not one (or name it: --tokenizer server:URL)", scrub.URL(target))
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	u.RawQuery, u.Fragment = "", ""
	return strings.TrimSuffix(u.String(), "/"), nil
}

// Name implements Counter: "server:" and the endpoint's URL, redacted.
func (s *Server) Name() string { return ServerName + ":" + scrub.URL(s.endpoint) }

// Endpoint is the tokenize endpoint's URL and the shape it answered in
// ("llama.cpp" or "vLLM").
func (s *Server) Endpoint() (string, string) { return s.endpoint, s.shape.name }

// Requests is how many tokenize requests s has sent.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Remote marks a counter whose counts are requests, not microseconds:
// callers skip counts they would make per chunk.
func (s *Server) Remote() bool { return true }

// Tokenize returns the ids of text in the server's tokenizer, special
// tokens (BOS) not added: one request, bounded by the configured timeout.
func (s *Server) Tokenize(ctx context.Context, text string) ([]int, error) {
	ids, err := s.tokenize(ctx, text)
	if err != nil {
		return nil, fmt.Errorf("tokenize endpoint %s: %w", scrub.URL(s.endpoint), err)
	}
	return ids, nil
}

// tokenize is Tokenize with errors that do not name the endpoint.
func (s *Server) tokenize(ctx context.Context, text string) ([]int, error) {
	body, err := json.Marshal(s.shape.body(text, s.cfg.Model))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range s.cfg.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	if s.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.cfg.APIKey)
	}
	s.requests.Add(1)
	resp, err := s.cfg.HTTP.Do(req)
	if err != nil {
		return nil, scrubErr(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenizeBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", scrubErr(err))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if len(data) > maxTokenizeBody {
		return nil, fmt.Errorf("answer over %d bytes", maxTokenizeBody)
	}
	return ParseTokens(data)
}

// scrubErr keeps secrets of URLs out of a transport error's text.
func scrubErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// CountContext counts text's tokens in the server's tokenizer: from the
// cache, or with one request.
func (s *Server) CountContext(ctx context.Context, text string) (int, error) {
	if text == "" {
		return 0, nil
	}
	s.mu.Lock()
	n, ok := s.cache[text]
	s.mu.Unlock()
	if ok {
		return n, nil
	}
	ids, err := s.Tokenize(ctx, text)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	if len(s.cache) >= serverCache {
		clear(s.cache)
	}
	s.cache[text] = len(ids)
	s.mu.Unlock()
	return len(ids), nil
}

// Count implements Counter with the context DialServer was given; a
// failed count is 0 (callers that can fail use CountContext).
func (s *Server) Count(text string) int {
	n, err := s.CountContext(s.ctx, text)
	if err != nil {
		return 0
	}
	return n
}
