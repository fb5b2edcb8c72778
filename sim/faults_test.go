package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/jitter"
)

// withinBinomial reports whether k successes of n are consistent with rate p
// (4.5 standard deviations: a false failure about once in 150,000 runs).
func withinBinomial(k, n int, p float64) bool {
	sd := math.Sqrt(float64(n) * p * (1 - p))
	return math.Abs(float64(k)-float64(n)*p) <= 4.5*sd+1
}

func post(t testing.TB, c *http.Client, url, body string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// TestFaultRates checks that 500s and 429s come at their configured rates,
// with OpenAI's error JSON and rate-limit headers, on chat, completions and
// embeddings alike.
func TestFaultRates(t *testing.T) {
	cfg := Deterministic(0, 0, 2)
	cfg.Faults = Faults{ErrorRate: 0.2, RateLimitRate: 0.1, RetryAfter: 2 * time.Second}
	_, url := startServer(t, cfg)
	c := newClient(1)
	const n = 600
	counts := map[int]int{}
	for i := range n {
		path, body := "/v1/completions", `{"prompt":"x"}`
		switch i % 3 {
		case 1:
			path, body = "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`
		case 2:
			path, body = "/v1/embeddings", `{"input":"x"}`
		}
		status, h, b := post(t, c, url+path, body)
		counts[status]++
		switch status {
		case 200:
		case 500:
			var e errorBody
			if json.Unmarshal(b, &e) != nil || e.Error.Type != "server_error" {
				t.Fatalf("500 body: %s", b)
			}
		case 429:
			var e errorBody
			if json.Unmarshal(b, &e) != nil || e.Error.Code == nil || *e.Error.Code != "rate_limit_exceeded" {
				t.Fatalf("429 body: %s", b)
			}
			for _, k := range []string{"x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens"} {
				if h.Get(k) != "0" {
					t.Fatalf("429 header %s = %q", k, h.Get(k))
				}
			}
			if h.Get("retry-after") != "2" {
				t.Fatalf("retry-after = %q, want 2", h.Get("retry-after"))
			}
		default:
			t.Fatalf("status %d: %s", status, b)
		}
	}
	t.Logf("statuses over %d requests: %v", n, counts)
	if !withinBinomial(counts[500], n, 0.2) || !withinBinomial(counts[429], n, 0.1) {
		t.Errorf("500s %d and 429s %d of %d, want rates 0.2 and 0.1", counts[500], counts[429], n)
	}
	m := getMetrics(t, c, url)
	if m[`spate_sim_faults_total{kind="error"}`] != float64(counts[500]) || m[`spate_sim_faults_total{kind="rate_limit"}`] != float64(counts[429]) {
		t.Errorf("fault metrics %v/%v, want %d/%d", m[`spate_sim_faults_total{kind="error"}`], m[`spate_sim_faults_total{kind="rate_limit"}`], counts[500], counts[429])
	}
}

// TestFaultsReproducible checks that the same seed and request order give the
// same faults, and another seed different ones.
func TestFaultsReproducible(t *testing.T) {
	run := func(seed int64) string {
		cfg := Deterministic(0, 0, 1)
		cfg.Seed = seed
		cfg.Faults = Faults{ErrorRate: 0.3, RateLimitRate: 0.2}
		_, url := startServer(t, cfg)
		c := newClient(1)
		var b strings.Builder
		for range 60 {
			status, _, _ := post(t, c, url+"/v1/completions", `{"prompt":"x"}`)
			b.WriteString(http.StatusText(status)[:1])
		}
		return b.String()
	}
	a, b, other := run(5), run(5), run(6)
	if a != b {
		t.Errorf("same seed, different faults:\n%s\n%s", a, b)
	}
	if a == other {
		t.Errorf("seeds 5 and 6 gave the same faults: %s", a)
	}
}

// TestStreamFaults checks truncation, stalls and latency spikes at their
// rates, each with its defining shape.
func TestStreamFaults(t *testing.T) {
	const n = 120
	for _, tc := range []struct {
		name   string
		faults Faults
		ttft   time.Duration
		itl    time.Duration
		tokens int
		check  func(r sseResult) bool // is this stream affected (and shaped right)?
		rate   float64
	}{
		{
			name: "truncate", faults: Faults{TruncateRate: 0.3}, tokens: 10,
			check: func(r sseResult) bool {
				if r.done {
					return false
				}
				return r.contents >= 1 && r.contents < 10 && errors.Is(r.readErr, io.ErrUnexpectedEOF)
			},
			rate: 0.3,
		},
		{
			name: "stall", faults: Faults{StallRate: 0.5, StallDuration: 40 * time.Millisecond}, ttft: 2 * time.Millisecond, itl: 2 * time.Millisecond, tokens: 8,
			check: func(r sseResult) bool {
				long := 0
				for _, g := range r.gaps {
					if g >= 38*time.Millisecond {
						long++
					}
				}
				return long == 1
			},
			rate: 0.5,
		},
		{
			name: "spike", faults: Faults{SpikeRate: 0.25, SpikeDelay: 40 * time.Millisecond}, ttft: 2 * time.Millisecond, tokens: 2,
			check: func(r sseResult) bool { return r.ttft >= 40*time.Millisecond },
			rate:  0.25,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Deterministic(tc.ttft, tc.itl, tc.tokens)
			cfg.Faults = tc.faults
			_, url := startServer(t, cfg)
			c := newClient(8)
			// An unaffected stream has a short TTFT and steady gaps; on a
			// busy machine a stall can give it a long one and count it as
			// affected, in the round the stall falls in: the rate is judged
			// on the best of a few rounds. A wrong rate is wrong in all.
			jitter.BestOf(t, func() []string {
				res := runConcurrent(n, 8, func(int) sseResult {
					return streamRequest(context.Background(), c, url+"/v1/chat/completions", chatBody("hi", ""))
				})
				affected := 0
				for i, r := range res {
					if r.status != 200 {
						t.Fatalf("request %d: status %d", i, r.status)
					}
					if tc.check(r) {
						affected++
					} else if !r.done || r.contents != tc.tokens || r.readErr != nil {
						t.Errorf("request %d: unaffected but incomplete: %d tokens, done %v, err %v", i, r.contents, r.done, r.readErr)
					}
				}
				t.Logf("%s: %d of %d streams affected (rate %.2f)", tc.name, affected, n, tc.rate)
				if !withinBinomial(affected, n, tc.rate) {
					return []string{fmt.Sprintf("%d of %d streams affected, want rate %.2f", affected, n, tc.rate)}
				}
				return nil
			})
		})
	}
}

// TestContextLength checks the 400 for prompt + max_tokens over the window,
// with OpenAI's exact error shape.
func TestContextLength(t *testing.T) {
	cfg := Deterministic(0, 0, 4)
	cfg.Faults.MaxContext = 50
	_, url := startServer(t, cfg)
	c := newClient(1)
	status, _, b := post(t, c, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hello"}],"max_tokens":100}`)
	if status != 400 {
		t.Fatalf("status %d: %s", status, b)
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Param   string `json:"param"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	if e.Error.Type != "invalid_request_error" || e.Error.Param != "messages" || e.Error.Code != "context_length_exceeded" ||
		!strings.HasPrefix(e.Error.Message, "This model's maximum context length is 50 tokens. However, you requested 108 tokens (8 in the messages, 100 in the completion).") {
		t.Errorf("error: %+v", e.Error)
	}
	if status, _, b := post(t, c, url+"/v1/completions", `{"prompt":"hello","max_tokens":40}`); status != 200 {
		t.Errorf("within the window: status %d: %s", status, b)
	}
	status, _, b = post(t, c, url+"/v1/completions", `{"prompt":"hello","max_tokens":60}`)
	if status != 400 || !strings.Contains(string(b), `"param":"prompt"`) {
		t.Errorf("completions over the window: %d %s", status, b)
	}
}

// TestAdminFaults checks GET/PUT/DELETE /admin/faults and that changes take
// effect on the next request.
func TestAdminFaults(t *testing.T) {
	_, url := startServer(t, Deterministic(0, 0, 1))
	c := newClient(1)
	do := func(method, body string) (int, faultsWire) {
		req, _ := http.NewRequest(method, url+"/admin/faults", strings.NewReader(body))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var w faultsWire
		b, _ := io.ReadAll(resp.Body)
		_ = json.Unmarshal(b, &w)
		return resp.StatusCode, w
	}
	if st, w := do("GET", ""); st != 200 || w.ErrorRate != 0 {
		t.Fatalf("GET: %d %+v", st, w)
	}
	if st, w := do("PUT", `{"error_rate":1,"spike_delay":"250ms","max_context":4096}`); st != 200 || w.ErrorRate != 1 || w.SpikeDelay != "250ms" || w.MaxContext != 4096 {
		t.Fatalf("PUT: %d %+v", st, w)
	}
	if status, _, _ := post(t, c, url+"/v1/completions", `{"prompt":"x"}`); status != 500 {
		t.Errorf("after PUT error_rate 1: status %d, want 500", status)
	}
	for _, bad := range []string{`{"error_rate":2}`, `{"spike_delay":"soon"}`, `{"unknown":1}`, `{"error_rate":0.6,"rate_limit_rate":0.6}`, `not json`} {
		if st, _ := do("PUT", bad); st != 400 {
			t.Errorf("PUT %s: status %d, want 400", bad, st)
		}
	}
	if st, w := do("DELETE", ""); st != 200 || w.ErrorRate != 0 {
		t.Errorf("DELETE: %d %+v", st, w)
	}
	if status, _, _ := post(t, c, url+"/v1/completions", `{"prompt":"x"}`); status != 200 {
		t.Errorf("after DELETE: status %d", status)
	}
	if st, _ := do("PATCH", "{}"); st != 405 {
		t.Errorf("PATCH: status %d, want 405", st)
	}
}

// TestSetFaultsClamps checks that SetFaults forces values into range.
func TestSetFaultsClamps(t *testing.T) {
	s, _ := startServer(t, Deterministic(0, 0, 1))
	s.SetFaults(Faults{ErrorRate: 0.7, RateLimitRate: 0.9, SpikeRate: -1, StallDuration: -time.Second, MaxContext: -5})
	f := s.Faults()
	if f.ErrorRate != 0.7 || math.Abs(f.RateLimitRate-0.3) > 1e-9 || f.SpikeRate != 0 || f.StallDuration != 0 || f.MaxContext != 0 {
		t.Errorf("clamped faults: %+v", f)
	}
	if err := f.Validate(); err != nil {
		t.Errorf("clamped faults invalid: %v", err)
	}
}
