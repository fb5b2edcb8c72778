// Package doctor checks what an OpenAI-compatible server is and does, in
// a few seconds and about a dozen small requests, before anyone loads it:
// the endpoints it serves, its models and their context, the shape of its
// stream, whether it honours max_tokens and ignore_eos, logprobs and
// reasoning fields, a tokenize endpoint, its metrics, its HTTP version and
// its clock. Each finding comes with the spate flags it implies.
//
// Stage: before the pipeline (a look at the target, like spate validate is
// a look at the file); docs/design.md. spate run reads the same model
// listing the same way (package serverinfo) into the result's provenance.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/result"
)

// Config says which server to check and how to reach it.
type Config struct {
	// Target is the API's base URL, e.g. http://127.0.0.1:8000/v1.
	Target string
	// Model is the model to ask; "" asks the first one listed.
	Model string
	// APIKey is sent as a bearer token; it appears in no finding.
	APIKey string
	// Headers are sent with every request.
	Headers http.Header
	// Timeout bounds each request (default 10 s).
	Timeout time.Duration
	// Client sends the requests (default: a client of its own).
	Client *http.Client
	// StreamTokens is how many tokens the stream check asks for, with
	// ignore_eos (default 8: quick on any server, and enough for a model
	// that stops on its own to show it).
	StreamTokens int
}

// Status is a finding's outcome.
type Status string

// The statuses of a finding.
const (
	// OK: the server has it, or does it as asked.
	OK Status = "ok"
	// No: the server does not have it (an endpoint answering 404, no
	// logprobs in the stream).
	No Status = "no"
	// Warn: the server has it, but not as spate's defaults expect: a
	// flag should change (Report.Flags says which).
	Warn Status = "warn"
	// Unknown: the check could not tell (the request failed, or an
	// earlier finding left nothing to ask).
	Unknown Status = "unknown"
)

// Finding is the outcome of one check.
type Finding struct {
	// Check names what was checked: "models", "chat", "stream",
	// "ignore_eos", "tokenize", "metrics", ... (docs/doctor.md lists them).
	Check  string `json:"check"`
	Status Status `json:"status"`
	// Detail says what was seen, in words.
	Detail string `json:"detail"`
}

// Flag is a spate flag a finding implies, and why.
type Flag struct {
	Flag string `json:"flag"`
	Why  string `json:"why"`
}

// Report is what the check found.
type Report struct {
	// Target is the base URL checked, with credentials removed; when its
	// /v1 was missing, the URL that worked.
	Target string `json:"target"`
	// Model is the model asked, and Models the ones listed.
	Model  string   `json:"model,omitempty"`
	Models []string `json:"models,omitempty"`
	// Server is what the model listing said of the server (software,
	// HTTP version, context length, clock).
	Server result.ServerInfo `json:"server"`
	// Findings are in the order of the checks.
	Findings []Finding `json:"findings"`
	// Flags are the spate flags the findings imply.
	Flags []Flag `json:"flags,omitempty"`
	// Requests is how many requests the check sent, and Seconds how long
	// it took.
	Requests int     `json:"requests"`
	Seconds  float64 `json:"seconds"`
}

// ErrUnreachable is a target no request reached: nothing was checked.
var ErrUnreachable = errors.New("unreachable")

// ErrBadTarget is a --target that is not an http(s) URL.
var ErrBadTarget = errors.New("not the API's base URL")

// ParseHeaders reads --header values ("Name: value") into a header.
func ParseHeaders(lines []string) (http.Header, error) {
	h := http.Header{}
	for _, l := range lines {
		k, v, ok := strings.Cut(l, ":")
		if !ok || strings.TrimSpace(k) == "" || strings.ContainsAny(l, "\r\n") {
			return nil, fmt.Errorf("--header %q: want 'Name: value' on one line", scrub.Text(l, 80))
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return h, nil
}

// Run checks the server at cfg.Target. It fails only when the target is
// not an http(s) URL or cannot be reached; everything else is a finding.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	u, err := url.Parse(cfg.Target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--target %q: %w: want e.g. http://127.0.0.1:8000/v1", scrub.URL(cfg.Target), ErrBadTarget)
	}
	if cfg.StreamTokens <= 0 {
		cfg.StreamTokens = 8
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	start := time.Now()
	c := &checker{cfg: cfg, api: strings.TrimRight(cfg.Target, "/")}
	c.report.Target = scrub.URL(c.api)
	if err := c.models(ctx); err != nil {
		return nil, err
	}
	c.context(ctx)
	c.chat(ctx)
	c.logprobs(ctx)
	c.endpoints(ctx)
	c.tokenize(ctx)
	c.metrics(ctx)
	c.health(ctx)
	c.report.Requests = c.sent
	c.report.Seconds = time.Since(start).Seconds()
	return &c.report, nil
}

// checker holds one check's state: the base URLs, what was found so far.
type checker struct {
	cfg    Config
	api    string // the API's base URL (…/v1)
	sent   int
	report Report
	chatOK bool // the chat endpoint answered a stream
	server string
}

// root is the server's root URL: the API's base without its /v1, where
// llama.cpp and vLLM serve /tokenize, /metrics and /health.
func (c *checker) root() string {
	return strings.TrimSuffix(c.api, "/v1")
}

func (c *checker) find(check string, s Status, format string, a ...any) {
	c.report.Findings = append(c.report.Findings, Finding{Check: check, Status: s, Detail: fmt.Sprintf(format, a...)})
}

func (c *checker) flag(flag, why string) {
	for _, f := range c.report.Flags {
		if f.Flag == flag {
			return
		}
	}
	c.report.Flags = append(c.report.Flags, Flag{Flag: flag, Why: why})
}
