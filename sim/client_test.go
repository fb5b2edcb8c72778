package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// startServer starts s on a loopback httptest server; both are closed when
// the test ends.
func startServer(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	hs := httptest.NewUnstartedServer(s)
	hs.Config.ConnContext = ConnContext // direct socket writes, as Serve does
	hs.Start()
	t.Cleanup(func() {
		hs.CloseClientConnections()
		_ = s.Close()
		hs.Close()
	})
	return s, hs.URL
}

// newClient returns an HTTP client able to hold n connections to one host.
func newClient(n int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0, DisableCompression: true}}
}

// sseResult is what the raw client saw of one streamed response.
type sseResult struct {
	status    int
	header    http.Header
	body      []byte // the body of a non-200 answer
	ttft      time.Duration
	gaps      []time.Duration // between content-bearing events
	text      string
	contents  int // content-bearing events
	roleFirst bool
	usage     *usageJSON
	finish    string
	done      bool // saw data: [DONE]
	readErr   error
}

// sseEvent is the part of a chunk the tests look at.
type sseEvent struct {
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usageJSON `json:"usage"`
}

// streamRequest posts body to url and reads the SSE stream line by line,
// timestamping each event as it is read (docs/design.md §3: TTFT is the first
// event carrying content; role-only and empty chunks do not count).
func streamRequest(ctx context.Context, c *http.Client, url, body string) sseResult {
	var r sseResult
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		r.readErr = err
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	// TTFT runs from the moment the request has been sent, so connection
	// set-up is not counted.
	// WroteRequest runs on the transport's writer goroutine, which Do does
	// not wait for: hand the time over atomically.
	var wrote atomic.Int64
	base := time.Now()
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(int64(time.Since(base))) },
	}))
	resp, err := c.Do(req)
	if err != nil {
		r.readErr = err
		return r
	}
	defer resp.Body.Close()
	r.status, r.header = resp.StatusCode, resp.Header
	if resp.StatusCode != http.StatusOK {
		r.body, _ = io.ReadAll(resp.Body)
		return r
	}
	br := bufio.NewReaderSize(resp.Body, 1<<16)
	var last time.Time
	var text strings.Builder
	events := 0
	for {
		line, err := br.ReadSlice('\n')
		now := time.Now()
		if err != nil {
			if err != io.EOF {
				r.readErr = err
			} else if !r.done {
				r.readErr = io.ErrUnexpectedEOF
			}
			break
		}
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data: "))
		if !ok {
			continue
		}
		if string(data) == "[DONE]" {
			r.done = true
			continue
		}
		events++
		// Cheap path for content events (no JSON decoding per token, so the
		// client keeps up with hundreds of streams even under -race).
		content, isContent := contentOf(data)
		if !isContent || events == 1 || bytes.Contains(data, []byte(`"finish_reason":"`)) || bytes.Contains(data, []byte(`"usage"`)) {
			var ev sseEvent
			if err := json.Unmarshal(data, &ev); err != nil {
				r.readErr = err
				break
			}
			if ev.Usage != nil {
				r.usage = ev.Usage
			}
			if len(ev.Choices) == 0 {
				continue
			}
			ch := ev.Choices[0]
			if events == 1 && ch.Delta.Role != nil && *ch.Delta.Role == "assistant" && (ch.Delta.Content == nil || *ch.Delta.Content == "") {
				r.roleFirst = true
			}
			if ch.FinishReason != nil {
				r.finish = *ch.FinishReason
			}
			switch {
			case ch.Delta.Content != nil:
				content = *ch.Delta.Content
			case ch.Text != nil:
				content = *ch.Text
			}
		}
		if content == "" {
			continue
		}
		text.WriteString(content)
		if r.contents == 0 {
			r.ttft = now.Sub(base.Add(time.Duration(wrote.Load())))
		} else {
			r.gaps = append(r.gaps, now.Sub(last))
		}
		last = now
		r.contents++
	}
	r.text = text.String()
	return r
}

// runConcurrent runs n copies of f on c goroutines at most.
func runConcurrent[T any](n, c int, f func(i int) T) []T {
	return runStaggered(n, c, 0, f)
}

// runStaggered runs n copies of f on c goroutines at most, starting copy i
// no earlier than i·stagger from now (so that arrivals are spread as in a
// steady state, not one synchronized burst).
func runStaggered[T any](n, c int, stagger time.Duration, f func(i int) T) []T {
	out := make([]T, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, c)
	start := time.Now()
	for i := range n {
		sem <- struct{}{}
		if d := time.Until(start.Add(time.Duration(i) * stagger)); d > 0 {
			time.Sleep(d)
		}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i] = f(i)
		})
	}
	wg.Wait()
	return out
}

// median returns the median of d (0 for none).
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// quantile returns the q-quantile of d (nearest rank).
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q * float64(len(s)-1))
	return s[i]
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// getMetrics scrapes url/metrics and returns the value of each series
// without labels other than model_name, keyed by metric name (and for
// labelled series, name{labels}).
func getMetrics(t testing.TB, c *http.Client, url string) map[string]float64 {
	t.Helper()
	resp, err := c.Get(url + "/metrics")
	if err != nil {
		t.Fatalf("scraping metrics: %v", err)
	}
	defer resp.Body.Close()
	out := make(map[string]float64)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		var v float64
		if err := json.Unmarshal([]byte(line[sp+1:]), &v); err != nil {
			continue // +Inf and the like
		}
		key := line[:sp]
		key = strings.Replace(key, `{model_name="spate-sim"}`, "", 1)
		key = strings.Replace(key, `,model_name="spate-sim"`, "", 1)
		out[key] = v
	}
	return out
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// decodeJSON decodes a 200 answer's JSON body into v.
func decodeJSON(resp *http.Response, v any) error {
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return json.Unmarshal(b, v)
}

// contentOf finds the text of a content event without decoding its JSON: the
// string after "content":" or "text":" (the simulator's words need no
// escapes). ok is false when the event has neither.
func contentOf(data []byte) (string, bool) {
	for _, key := range []string{`"delta":{"content":"`, `"text":"`} {
		i := bytes.Index(data, []byte(key))
		if i < 0 {
			continue
		}
		rest := data[i+len(key):]
		j := bytes.IndexByte(rest, '"')
		if j < 0 {
			return "", false
		}
		return string(rest[:j]), true
	}
	return "", false
}

// readFile returns the contents of a file of the package.
func readFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return string(b)
}
