package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/jitter"
)

// tinyEngine is a fast engine model for HTTP-level tests.
func tinyEngine() *EngineConfig {
	return &EngineConfig{
		MaxNumSeqs: 16, MaxBatchedTokens: 1024, KVCacheTokens: 2048, BlockSize: 16,
		ChunkedPrefill: true, PrefixCaching: true,
		StepBase: time.Millisecond, DecodePerSeq: 20 * time.Microsecond, PrefillPerToken: 2 * time.Microsecond,
	}
}

func chatBody(content string, extra string) string {
	b, _ := json.Marshal(content)
	return `{"model":"spate-sim","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":` + string(b) + `}],"stream":true,"stream_options":{"include_usage":true}` + extra + `}`
}

// TestEngineModeOverHTTP streams through the real-time engine with a KV
// cache too small for the load: preemptions must show in /metrics, and every
// stream must still arrive whole.
func TestEngineModeOverHTTP(t *testing.T) {
	cfg := Deterministic(0, 0, 0)
	cfg.Engine = tinyEngine()
	_, url := startServer(t, cfg)
	c := newClient(16)
	v := newVocab()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n, out = 12, 200
	res := runConcurrent(n, n, func(i int) sseResult {
		return streamRequest(ctx, c, url+"/v1/chat/completions", chatBody(wordsText(v, uint64(i), 100), fmt.Sprintf(`,"max_tokens":%d,"ignore_eos":true`, out)))
	})
	for i, r := range res {
		if r.status != 200 || r.readErr != nil || !r.done {
			t.Fatalf("request %d: status %d, err %v, done %v, body %s", i, r.status, r.readErr, r.done, r.body)
		}
		if r.contents != out || r.usage == nil || r.usage.CompletionTokens != out || r.finish != "length" {
			t.Errorf("request %d: %d tokens, usage %+v, finish %q", i, r.contents, r.usage, r.finish)
		}
	}
	m := getMetrics(t, c, url)
	if m["vllm:num_preemptions_total"] == 0 {
		t.Errorf("12 requests of ~320 tokens in a 2,048-token KV cache: vllm:num_preemptions_total = 0")
	}
	if m["vllm:generation_tokens_total"] != n*out {
		t.Errorf("vllm:generation_tokens_total = %v, want %d", m["vllm:generation_tokens_total"], n*out)
	}
	if m["spate_sim_engine_steps_total"] < out {
		t.Errorf("spate_sim_engine_steps_total = %v, want ≥ %d", m["spate_sim_engine_steps_total"], out)
	}
	for _, name := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc",
		"vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:prompt_tokens_total",
		"vllm:time_to_first_token_seconds_count", "vllm:inter_token_latency_seconds_count", "vllm:e2e_request_latency_seconds_count",
		"vllm:request_queue_time_seconds_count", `vllm:request_success_total{finished_reason="length"}`} {
		if _, ok := m[name]; !ok {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if m["vllm:time_to_first_token_seconds_count"] != n || m[`vllm:request_success_total{finished_reason="length"}`] != n {
		t.Errorf("TTFT count %v, successes %v, want %d", m["vllm:time_to_first_token_seconds_count"], m[`vllm:request_success_total{finished_reason="length"}`], n)
	}
	if m["vllm:prefix_cache_queries_total"] == 0 {
		t.Error("vllm:prefix_cache_queries_total = 0")
	}
}

// TestEnginePrefixCachingOverHTTP checks that requests sharing a long system
// prompt hit the prefix cache and get their first token sooner.
func TestEnginePrefixCachingOverHTTP(t *testing.T) {
	cfg := Deterministic(0, 0, 4)
	e := tinyEngine()
	e.KVCacheTokens = 65536
	e.MaxBatchedTokens = 8192
	e.PrefillPerToken = 50 * time.Microsecond // 2,000 tokens: 100 ms
	cfg.Engine = e
	_, url := startServer(t, cfg)
	c := newClient(1)
	v := newVocab()
	system, _ := json.Marshal(wordsText(v, 9, 2000))
	var ttfts []time.Duration
	for i := range 4 {
		body := `{"messages":[{"role":"system","content":` + string(system) + `},{"role":"user","content":"question ` + fmt.Sprint(i) + `"}],"stream":true}`
		r := streamRequest(context.Background(), c, url+"/v1/chat/completions", body)
		if r.status != 200 || r.contents != 4 {
			t.Fatalf("request %d: status %d, %d tokens, err %v", i, r.status, r.contents, r.readErr)
		}
		ttfts = append(ttfts, r.ttft)
	}
	m := getMetrics(t, c, url)
	t.Logf("TTFTs %v; prefix cache hits %v of %v queried tokens", ttfts, m["vllm:prefix_cache_hits_total"], m["vllm:prefix_cache_queries_total"])
	if m["vllm:prefix_cache_hits_total"] < 3*1900 {
		t.Errorf("vllm:prefix_cache_hits_total = %v, want ≥ %d", m["vllm:prefix_cache_hits_total"], 3*1900)
	}
	if later := median(ttfts[1:]); later > ttfts[0]/3 {
		t.Errorf("TTFT with a cached prefix %v, without %v: want under a third", later, ttfts[0])
	}
}

// TestRAGProfile checks that the RAG stages delay the first token and that
// the retrieved context is counted in usage.prompt_tokens.
func TestRAGProfile(t *testing.T) {
	cfg := Deterministic(0, 0, 3)
	e := tinyEngine()
	e.KVCacheTokens = 16384
	e.RAG = &RAGConfig{RetrieveMedian: 30 * time.Millisecond, RerankMedian: 20 * time.Millisecond, Sigma: 0, ContextTokens: 500}
	cfg.Engine = e
	_, url := startServer(t, cfg)
	probe := jitter.Start(time.Millisecond)
	r := streamRequest(context.Background(), newClient(1), url+"/v1/completions", `{"prompt":"one two three","stream":true,"stream_options":{"include_usage":true}}`)
	late := probe.Stop()
	if r.status != 200 || r.usage == nil {
		t.Fatalf("status %d, err %v", r.status, r.readErr)
	}
	if r.usage.PromptTokens != 3+500 {
		t.Errorf("prompt_tokens %d, want 503", r.usage.PromptTokens)
	}
	// One request: a stall of the machine delays it whole, so the upper
	// bound grows by the worst lateness the probe saw meanwhile.
	if hi := 250*time.Millisecond + 2*late.Max; r.ttft < 50*time.Millisecond || r.ttft > hi {
		t.Errorf("TTFT %v, want retrieve 30ms + rerank 20ms + a prefill (50ms..%v; %v)", r.ttft, hi, late)
	}
}

// TestEndpoints checks models, health, metrics format, adapters and errors.
func TestEndpoints(t *testing.T) {
	cfg := Deterministic(0, 0, 2)
	cfg.Engine = tinyEngine()
	cfg.Engine.LoRA = LoRAConfig{Adapters: []string{"sql", "chat"}, MaxLoRAs: 1, LoadTime: time.Millisecond}
	cfg.Model = "base-model"
	_, url := startServer(t, cfg)
	c := newClient(1)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		contains                 string
	}{
		{"health", "GET", "/health", "", 200, ""},
		{"models", "GET", "/v1/models", "", 200, `"id":"sql","object":"model"`},
		{"models-parent", "GET", "/v1/models", "", 200, `"parent":"base-model"`},
		{"metrics", "GET", "/metrics", "", 200, `vllm:num_requests_running{model_name="base-model"}`},
		{"adapter-by-name", "POST", "/v1/completions", `{"model":"sql","prompt":"x"}`, 200, `"model":"sql"`},
		{"adapter-base-colon", "POST", "/v1/completions", `{"model":"base-model:chat","prompt":"x"}`, 200, `"text_completion"`},
		{"unknown-adapter", "POST", "/v1/completions", `{"model":"base-model:nope","prompt":"x"}`, 404, `"code":"model_not_found"`},
		{"any-model-name", "POST", "/v1/completions", `{"model":"gpt-4o","prompt":"x"}`, 200, `"model":"gpt-4o"`},
		{"bad-json", "POST", "/v1/chat/completions", `{"messages":`, 400, `"type":"invalid_request_error"`},
		{"no-messages", "POST", "/v1/chat/completions", `{"messages":[]}`, 400, `"param":"messages"`},
		{"bad-max-tokens", "POST", "/v1/completions", `{"prompt":"x","max_tokens":0}`, 400, `"param":"max_tokens"`},
		{"wrong-type", "POST", "/v1/completions", `{"prompt":"x","max_tokens":"ten"}`, 400, `max_tokens`},
		{"n-above-1", "POST", "/v1/completions", `{"prompt":"x","n":2}`, 400, `"param":"n"`},
		{"no-prompt", "POST", "/v1/completions", `{"model":"m"}`, 400, `"param":"prompt"`},
		{"wrong-method", "GET", "/v1/chat/completions", "", 405, `"code":"method_not_allowed"`},
		{"unknown-path", "GET", "/v2/nothing", "", 404, `"error"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, url+tc.path, strings.NewReader(tc.body))
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tc.status, b)
			}
			if !strings.Contains(string(b), tc.contains) {
				t.Errorf("body lacks %s:\n%s", tc.contains, b)
			}
			if tc.status >= 400 {
				var e errorBody
				if err := json.Unmarshal(b, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
					t.Errorf("error body is not OpenAI's error JSON: %s", b)
				}
			}
		})
	}
}

// TestServeAndClose runs Serve on a loopback listener, cancels it mid-stream
// and checks that Serve returns and Close does not hang.
func TestServeAndClose(t *testing.T) {
	s, err := New(Deterministic(10*time.Millisecond, 10*time.Millisecond, 1000))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, ln, s) }()
	got := make(chan sseResult, 1)
	go func() {
		got <- streamRequest(context.Background(), newClient(1), "http://"+ln.Addr().String()+"/v1/completions", `{"prompt":"x","stream":true}`)
	}()
	// Shut down mid-stream: once the server has the request and a few of
	// its 10 ms tokens have left.
	waitMetric(t, newClient(1), "http://"+ln.Addr().String(), "vllm:num_requests_running", 1)
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancellation")
	}
	r := <-got
	if r.done || r.contents == 0 || r.contents >= 1000 {
		t.Errorf("stream cut by shutdown: %d tokens, done %v", r.contents, r.done)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestCloseEndsStreams checks that Close cuts streams in flight and that
// later requests get 503.
func TestCloseEndsStreams(t *testing.T) {
	for _, engine := range []bool{false, true} {
		cfg := Deterministic(5*time.Millisecond, 5*time.Millisecond, 10000)
		if engine {
			cfg.Engine = tinyEngine()
			cfg.Engine.KVCacheTokens = 65536
		}
		s, url := startServer(t, cfg)
		got := make(chan sseResult, 1)
		go func() {
			got <- streamRequest(context.Background(), newClient(1), url+"/v1/completions", `{"prompt":"x","stream":true,"max_tokens":10000}`)
		}()
		time.Sleep(50 * time.Millisecond)
		done := make(chan struct{})
		go func() { _ = s.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("engine=%v: Close hung with a stream in flight", engine)
		}
		r := <-got
		if r.done {
			t.Errorf("engine=%v: stream completed despite Close", engine)
		}
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("engine=%v: after Close status %d, want 503", engine, resp.StatusCode)
		}
	}
}

// TestClientDisconnect checks that a client going away mid-stream frees the
// request (running gauge back to 0) in both modes.
func TestClientDisconnect(t *testing.T) {
	for _, engine := range []bool{false, true} {
		cfg := Deterministic(time.Millisecond, 2*time.Millisecond, 5000)
		if engine {
			cfg.Engine = tinyEngine()
			cfg.Engine.KVCacheTokens = 65536
		}
		_, url := startServer(t, cfg)
		c := newClient(2)
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan sseResult, 1)
		go func() {
			got <- streamRequest(ctx, c, url+"/v1/completions", `{"prompt":"x","stream":true,"max_tokens":5000}`)
		}()
		// Disconnect once the server has the request (a fixed sleep can
		// end before a busy machine delivers it).
		waitMetric(t, c, url, "vllm:num_requests_running", 1)
		cancel()
		<-got
		deadline := time.Now().Add(30 * time.Second)
		for {
			m := getMetrics(t, c, url)
			if m["vllm:num_requests_running"] == 0 && m[`vllm:request_success_total{finished_reason="abort"}`] == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("engine=%v: after disconnect running=%v aborts=%v", engine, m["vllm:num_requests_running"], m[`vllm:request_success_total{finished_reason="abort"}`])
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
