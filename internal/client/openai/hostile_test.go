package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/longtest"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/llmtest"
)

// TestHostileConnections: a reset before headers, a redirect loop and a
// redirect to another host, each against the hostile test server.
func TestHostileConnections(t *testing.T) {
	h := llmtest.NewHostile()
	defer h.Close()
	for _, tc := range []struct {
		behaviour string
		want      record.ErrorKind
		msg       string
	}{
		{llmtest.Reset, record.ConnectReset, ""},           // was request_failed
		{llmtest.RedirectLoop, record.RedirectLoop, ""},    // was request_failed
		{llmtest.RedirectElsewhere, record.OK, ""},         // answered by the other host
		{llmtest.Echo, "http_400", "bad request to /echo"}, // the body, escaped
	} {
		t.Run(tc.behaviour, func(t *testing.T) {
			c := newClient(t, strings.TrimSuffix(h.BaseURL(tc.behaviour), "/v1"), func(c *Config) {
				c.Headers = http.Header{"X-Api-Key": {"hv-custom-key"}, "Api-Key": {"hv-azure-key"}}
				c.APIKey = "sk-bearer-key"
			})
			rec := do(c, &workload.Request{Prompt: "p"})
			if rec.Err != tc.want || !strings.Contains(rec.ErrMsg, tc.msg) {
				t.Fatalf("err %q %q, want %q containing %q", rec.Err, rec.ErrMsg, tc.want, tc.msg)
			}
		})
	}
	for _, hd := range h.OtherHeaders() {
		for _, k := range []string{"X-Api-Key", "Api-Key", "Authorization"} {
			if v := hd.Get(k); v != "" {
				t.Errorf("the redirect sent %s: %s to another host", k, v)
			}
		}
	}
	if len(h.OtherHeaders()) == 0 {
		t.Error("the other host got no request")
	}
}

// TestEndpointKeepsQuery: a target with a query string (Azure's
// api-version) gets the API path before the query (it built
// /v1?api-version=…/chat/completions).
func TestEndpointKeepsQuery(t *testing.T) {
	for _, c := range []struct{ base, path, want string }{
		{"http://h/v1", "/chat/completions", "http://h/v1/chat/completions"},
		{"http://h/v1/", "/models", "http://h/v1/models"},
		{"https://h/openai/deployments/d?api-version=2024-02-01", "/chat/completions", "https://h/openai/deployments/d/chat/completions?api-version=2024-02-01"},
		{"http://h/api?key=1", "/search?q=a%20b", "http://h/api/search?key=1&q=a%20b"},
		{"http://h/a%2Fb?k=1", "/x", "http://h/a%2Fb/x?k=1"},
	} {
		if got := Endpoint(c.base, c.path); got != c.want {
			t.Errorf("Endpoint(%q, %q) = %q, want %q", c.base, c.path, got, c.want)
		}
	}
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.RequestURI())
		if strings.HasSuffix(r.URL.Path, "/models") {
			w.Write([]byte(`{"data":[{"id":"m1"}]}`))
			return
		}
		script(regular(0, 0, 2, true)...)(w, r)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, func(c *Config) { c.BaseURL = srv.URL + "/v1?api-version=7" })
	if rec := do(c, &workload.Request{Prompt: "p"}); rec.Failed() {
		t.Fatalf("%s %s", rec.Err, rec.ErrMsg)
	}
	if ids, err := c.Models(context.Background()); err != nil || len(ids) != 1 {
		t.Fatalf("models %v %v", ids, err)
	}
	if len(got) != 2 || got[0] != "/v1/chat/completions?api-version=7" || got[1] != "/v1/models?api-version=7" {
		t.Fatalf("requests %q", got)
	}
}

// TestModelsListingChecked: a listing over its limit, or naming an id
// with escape codes, is an error that says to pass --model.
func TestModelsListingChecked(t *testing.T) {
	h := llmtest.NewHostile()
	defer h.Close()
	for _, tc := range []struct{ behaviour, want string }{
		{llmtest.HugeModels, "over the modelList limit"},
		{llmtest.EscapeModel, `not printable text`},
	} {
		c := newClient(t, strings.TrimSuffix(h.BaseURL(tc.behaviour), "/v1"), nil)
		_, err := c.Models(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--model") || strings.Contains(err.Error(), "\x1b") {
			t.Errorf("%s: %v", tc.behaviour, err)
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		status int
		v      string
		want   time.Duration
	}{
		{429, "2", 2 * time.Second},
		{503, "0.5", 500 * time.Millisecond},
		{429, now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{429, "soon", 0},
		{429, "-3", 0},
		{500, "2", 0},
		{429, "", 0},
	} {
		if got := RetryAfter(c.status, c.v, now); got != c.want {
			t.Errorf("RetryAfter(%d, %q) = %v, want %v", c.status, c.v, got, c.want)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		http.Error(w, "slow", 429)
	}))
	defer srv.Close()
	if rec := do(newClient(t, srv.URL, nil), &workload.Request{Prompt: "p"}); rec.RetryAfter != 3*time.Second {
		t.Errorf("record RetryAfter %v", rec.RetryAfter)
	}
}

// TestDrainedIsATimeout: a request still running when the engine's drain
// runs out is a timeout, not a cancellation (which is for Ctrl-C).
func TestDrainedIsATimeout(t *testing.T) {
	srv := httptest.NewServer(script(step{data: chunk(" a")}, step{at: 5 * time.Second, data: "[DONE]"}))
	defer srv.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(100*time.Millisecond, func() { cancel(record.ErrDrained) })
	rec := &record.Record{}
	rec.Reset()
	rec.Sent = time.Now()
	newClient(t, srv.URL, nil).Do(ctx, &workload.Request{Prompt: "p"}, rec)
	if rec.Err != record.Timeout || !strings.Contains(rec.ErrMsg, "drain") {
		t.Fatalf("err %q %q", rec.Err, rec.ErrMsg)
	}
}

// FuzzRetryAfter: whatever the header, the wait is >= 0 and bounded.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "0.5", "Fri, 02 Jan 2026 03:05:35 GMT", "1e400", "NaN", "-1", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if d := RetryAfter(429, v, now); d < 0 || d > 1e6*time.Second+time.Second && !strings.Contains(v, ",") {
			t.Fatalf("%q → %v", v, d)
		}
	})
}

// TestHostileReads: what a server sends that is over a limit, not what
// the API sends, or a usage that cannot be true fails the request with
// its own kind (they were stream_broken "stream ended without data:
// [DONE]", a 256 MB read, or summed).
func TestHostileReads(t *testing.T) {
	h := llmtest.NewHostile()
	defer h.Close()
	for _, tc := range []struct {
		behaviour string
		stream    bool
		want      record.ErrorKind
		msg       string
	}{
		{llmtest.Garbage, true, record.BadResponse, "not a server-sent event stream"},
		{llmtest.NotSSE, true, record.BadResponse, "not a server-sent event stream"},
		{llmtest.NegativeUsage, true, record.BadUsage, "usage.prompt_tokens is -96"},
		{llmtest.NegativeUsage, false, record.BadUsage, "usage.prompt_tokens is -96"},
		{llmtest.AbsurdUsage, true, record.BadUsage, "usage.completion_tokens is 9000000000000000000"},
		{llmtest.Endless, true, record.TooLarge, "responseText limit of 1048576 bytes"},
		{llmtest.BigBody, false, record.TooLarge, "responseBody limit of 1048576 bytes"},
		{llmtest.LongModel, true, record.TooLarge, "modelId limit of 1024 bytes"},
		{llmtest.LongModel, false, record.TooLarge, "modelId limit"},
		{llmtest.EscapeModel, true, record.OK, ""},
		{llmtest.HugeWord, true, record.OK, ""},
	} {
		t.Run(fmt.Sprintf("%s stream=%v", tc.behaviour, tc.stream), func(t *testing.T) {
			c := newClient(t, strings.TrimSuffix(h.BaseURL(tc.behaviour), "/v1"), func(c *Config) {
				c.Stream, c.MaxText, c.MaxBody = tc.stream, 1<<20, 1<<20
				if tc.behaviour == llmtest.HugeWord && !longtest.On {
					// BPE on one 300 KB word takes 2 s under -race;
					// the tokenizer's own tests bound it. Here the
					// client reads the word whole and counts it with
					// its tokenizer; -tags integration with cl100k.
					c.Tokenizer = quarterCounter{}
				}
			})
			rec := do(c, &workload.Request{Prompt: "p"})
			if rec.Err != tc.want || !strings.Contains(rec.ErrMsg, tc.msg) {
				t.Fatalf("err %q %q, want %q containing %q", rec.Err, rec.ErrMsg, tc.want, tc.msg)
			}
			if strings.ContainsAny(rec.Model+rec.ErrMsg, "\x1b\r") {
				t.Errorf("a control character kept: model %q, message %q", rec.Model, rec.ErrMsg)
			}
			if tc.behaviour == llmtest.HugeWord && (rec.OutputSource != record.TokensTokenizer || rec.OutputTokens < 1000) {
				t.Errorf("a 300 KB word counted as %d tokens from %s", rec.OutputTokens, rec.OutputSource)
			}
		})
	}
}

// TestHeaderInjection: a header value with a CR or LF is refused.
func TestHeaderInjection(t *testing.T) {
	if _, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", API: Chat, Headers: http.Header{"X-A": {"v\r\nX-Evil: 1"}}}); err == nil || !strings.Contains(err.Error(), "one line") {
		t.Fatalf("err %v", err)
	}
}

// quarterCounter counts a token for every 4 bytes.
type quarterCounter struct{}

func (quarterCounter) Name() string { return "quarter" }

func (quarterCounter) Count(s string) int { return (len(s) + 3) / 4 }

// slowCounter is a tokenizer whose count takes 10 s, or until its context
// ends where it is given one: a stand-in for counting megabytes.
type slowCounter struct{}

func (slowCounter) Name() string { return "slow" }

func (slowCounter) Count(string) int { time.Sleep(10 * time.Second); return 1 }

func (slowCounter) CountContext(ctx context.Context, _ string) (int, error) {
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(10 * time.Second):
		return 1, nil
	}
}

// TestCountingIsBoundedByTimeout: counting a response's tokens is part of
// the request's work: it stops at the request's timeout (it ran after
// the stream, past the timeout and past the run's end: a 300 KB word with
// --timeout 2s took 91 s), on both read paths.
func TestCountingIsBoundedByTimeout(t *testing.T) {
	// The two paths wait out their timeouts side by side, each with its
	// own server.
	for _, nethttp := range []bool{false, true} {
		t.Run(fmt.Sprintf("net/http=%v", nethttp), func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(script(step{data: chunk("a b c")}, step{data: "[DONE]"}))
			defer srv.Close()
			c := newClient(t, srv.URL, func(c *Config) {
				c.Tokenizer, c.Timeout, c.NetHTTP = slowCounter{}, 2*time.Second, nethttp
			})
			start := time.Now()
			rec := do(c, &workload.Request{Prompt: "p"})
			took := time.Since(start)
			if rec.Err != record.Timeout || !strings.Contains(rec.ErrMsg, "counting") || took > 6*time.Second {
				t.Errorf("err %q %q after %v, want a timeout while counting, at 2 s", rec.Err, rec.ErrMsg, took)
			}
		})
	}
}

// FuzzParseModels: whatever a /models listing holds, the ids kept are
// printable text within the modelId limit, and an error is one line.
func FuzzParseModels(f *testing.F) {
	for _, s := range []string{`{"data":[{"id":"m1"},{"id":"m2"}]}`, `{"data":[{"id":"m\u001b[2K"}]}`, `{"data":{}}`, `[`, `{"data":[{"id":7}]}`} {
		f.Add([]byte(s))
	}
	c := &Client{cfg: Config{MaxModelID: 64}}
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := c.parseModels(b, "http://h/v1/models")
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r\x1b") {
				t.Fatalf("error %q", err)
			}
			return
		}
		for _, id := range ids {
			if len(id) > 64 || strings.ContainsAny(id, "\n\r\x1b\x00") {
				t.Fatalf("id %q kept", id)
			}
		}
	})
}
