package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/llmtest"
	"github.com/spate-dev/spate/sim"
)

// recorded reads a recorded response from testdata.
func recorded(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name + ".response")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// notFound is a plain 404 for the paths a recording does not cover.
const notFound = "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found"

// byFinding indexes a report's findings by check.
func byFinding(r *Report) map[string]Finding {
	m := map[string]Finding{}
	for _, f := range r.Findings {
		m[f.Check] = f
	}
	return m
}

func flags(r *Report) string {
	var s []string
	for _, f := range r.Flags {
		s = append(s, f.Flag)
	}
	return strings.Join(s, " | ")
}

// want is one expected finding: its status and a piece of its detail.
type want struct {
	status Status
	detail string
}

func check(t *testing.T, r *Report, wants map[string]want) {
	t.Helper()
	got := byFinding(r)
	for k, w := range wants {
		f, ok := got[k]
		if !ok {
			t.Errorf("no %q finding", k)
			continue
		}
		if f.Status != w.status || !strings.Contains(f.Detail, w.detail) {
			t.Errorf("%s: got %s %q, want %s with %q", k, f.Status, f.Detail, w.status, w.detail)
		}
	}
}

// TestLlamaCppRecorded checks a replay of llama.cpp b4747's recorded
// answers: what the doctor says of it is what the bytes show.
func TestLlamaCppRecorded(t *testing.T) {
	srv := llmtest.NewRouted(func(req *http.Request, body []byte) []byte {
		name := ""
		switch req.Method + " " + req.URL.Path {
		case "GET /v1/models":
			name = "models"
		case "GET /props":
			name = "props"
		case "GET /health":
			name = "health"
		case "GET /metrics":
			name = "metrics"
		case "POST /tokenize":
			name = "tokenize"
		case "POST /v1/chat/completions":
			name = "chat-stream"
			if bytes.Contains(body, []byte(`"logprobs"`)) {
				name = "chat-logprobs-stream"
			}
		case "POST /v1/completions":
			name = "completions-whole"
		default: // b4747 answers an unknown path so (recorded: GET /v1/nothing)
			name = "not-found"
		}
		return recorded(t, "llama.cpp-b4747-"+name)
	})
	defer srv.Close()
	// The recorded stream asked 12 tokens (and got 12, finish_reason length).
	r, err := Run(context.Background(), Config{Target: srv.URL + "/v1", StreamTokens: 12, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	check(t, r, map[string]want{
		"models":      {OK, "tiny-llama (1 listed)"},
		"server":      {OK, "llama.cpp (Server: llama.cpp, owned_by: llamacpp)"},
		"http":        {OK, "HTTP/1.1"},
		"clock":       {Unknown, "no Date header"},
		"context":     {OK, "8192 tokens (meta.n_ctx_train); 2048 per slot, 4 slots"},
		"chat":        {OK, "yes, streams (text/event-stream)"},
		"stream":      {OK, "13 events, 12 with content; no role-only first chunk; usage (stream_options.include_usage asked) beside the last choice; ends with data: [DONE]"},
		"max_tokens":  {OK, "honoured: asked 12, got 12 (usage's completion_tokens)"},
		"ignore_eos":  {OK, `12 of 12 tokens, finish_reason "length"`},
		"reasoning":   {No, "no reasoning field"},
		"logprobs":    {OK, "yes"},
		"completions": {OK, "yes"},
		"responses":   {No, "no (HTTP 404: File Not Found)"},
		"tokenize":    {OK, "llama.cpp's shape"},
		"metrics":     {OK, "llama.cpp metrics"},
		"health":      {OK, "200"},
	})
	if got, want := flags(r), "--tokenizer server | --scrape "+srv.URL+"/metrics"; got != want {
		t.Errorf("flags: %s, want %s", got, want)
	}
	if r.Requests < 10 || r.Requests > 16 {
		t.Errorf("%d requests, want a dozen or so", r.Requests)
	}
}

// TestVLLMCompatibleRecorded checks a replay of llm-d-inference-sim's
// (a vLLM-compatible server's) recorded answers.
func TestVLLMCompatibleRecorded(t *testing.T) {
	srv := llmtest.NewRouted(func(req *http.Request, body []byte) []byte {
		switch req.Method + " " + req.URL.Path {
		case "GET /v1/models":
			return recorded(t, "llm-d-inference-sim-v0.10.2-models")
		case "GET /metrics":
			return recorded(t, "llm-d-inference-sim-v0.10.2-metrics")
		case "POST /v1/chat/completions":
			return recorded(t, "llm-d-inference-sim-v0.10.2-chat-stream")
		case "POST /v1/completions":
			return recorded(t, "llm-d-inference-sim-v0.10.2-completions-stream")
		}
		return []byte(notFound) // not recorded
	})
	defer srv.Close()
	r, err := Run(context.Background(), Config{Target: srv.URL + "/v1", Model: "sim-model", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	check(t, r, map[string]want{
		"models":     {OK, "test-model, sim-model (2 listed)"},
		"server":     {OK, "vLLM (owned_by: vllm)"},
		"context":    {OK, "65536 tokens (max_model_len)"},
		"clock":      {OK, "this machine's"},
		"stream":     {OK, "a first chunk with the role only; usage (stream_options.include_usage asked) in a chunk of its own"},
		"max_tokens": {OK, "honoured: asked 8"},
		"tokenize":   {No, "no"},
		"metrics":    {OK, "vLLM metrics"},
		"logprobs":   {No, "no chunk carried"},
	})
	if r.Model != "sim-model" || strings.Contains(flags(r), "--model") {
		t.Errorf("model %q, flags %s: the model asked is kept and not suggested", r.Model, flags(r))
	}
}

// TestSimulator checks the built-in simulator end to end: every endpoint
// spate drives is there, ignore_eos is honoured, vLLM's metrics.
func TestSimulator(t *testing.T) {
	s, err := sim.New(sim.Deterministic(time.Millisecond, time.Millisecond, 64))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hs := httptest.NewServer(s)
	defer hs.Close()
	// The target without its /v1: corrected, and said.
	r, err := Run(context.Background(), Config{Target: hs.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	check(t, r, map[string]want{
		"server":      {OK, "spate sim (owned_by: spate)"},
		"chat":        {OK, "yes"},
		"ignore_eos":  {OK, "honoured: 8 of 8 tokens"},
		"completions": {OK, "yes"},
		"responses":   {OK, "yes"},
		"embeddings":  {OK, "yes"},
		"tokenize":    {OK, "llama.cpp's shape"},
		"metrics":     {OK, "vLLM metrics"},
		"health":      {OK, "200"},
	})
	if flags(r) != "--target "+hs.URL+"/v1 | --tokenizer server | --scrape "+hs.URL+"/metrics" || r.Target != hs.URL+"/v1" {
		t.Errorf("target %s, flags %s: want the /v1 added and said", r.Target, flags(r))
	}
	var text, js bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "flags these findings imply:\n  --target "+hs.URL+"/v1") {
		t.Errorf("text:\n%s", text.String())
	}
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Findings) != len(r.Findings) {
		t.Errorf("JSON round trip: %v, %d findings", err, len(back.Findings))
	}
}

// TestIgnoreEOSIgnored is a server that stops where its model does
// whatever ignore_eos says (Ollama does so): the finding says so and
// suggests --ignore-eos false; a key given is sent and never shown.
func TestIgnoreEOSIgnored(t *testing.T) {
	const key = "sk-doctor-secret-1234"
	var auth []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		switch r.URL.Path {
		case "/v1/models":
			w.Write([]byte(`{"object":"list","data":[{"id":"llama3.2:1b","object":"model","owned_by":"library"}]}`))
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			for _, c := range []string{`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}`,
				`{"choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}]}`,
				`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}`} {
				w.Write([]byte("data: " + c + "\n\n"))
			}
			w.Write([]byte("data: [DONE]\n\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer hs.Close()
	r, err := Run(context.Background(), Config{Target: hs.URL + "/v1", APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	check(t, r, map[string]want{
		"server":     {OK, "Ollama (owned_by: library)"},
		"ignore_eos": {Warn, "ignored: the model stopped after 2 of 8 tokens"},
		"tokenize":   {No, "no"},
		"metrics":    {No, "no"},
	})
	if !strings.Contains(flags(r), "--ignore-eos false") {
		t.Errorf("flags %s: want --ignore-eos false", flags(r))
	}
	for _, a := range auth {
		if a != "Bearer "+key && a != "" {
			t.Errorf("Authorization %q", a)
		}
	}
	var js bytes.Buffer
	WriteJSON(&js, r)
	if strings.Contains(js.String(), key) {
		t.Error("the key is in the report")
	}
}

// TestHTTP2Only: Go's cleartext HTTP/2 server without HTTP/1.1 resets
// the check's request; the doctor says what the server speaks.
func TestHTTP2Only(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	s := &http.Server{Handler: http.NotFoundHandler(), Protocols: &p}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ln) }()
	defer func() { s.Close(); <-done }()
	_, err = Run(context.Background(), Config{Target: "http://" + ln.Addr().String() + "/v1", Timeout: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "speaks HTTP/2 only (over cleartext)") {
		t.Errorf("err %v", err)
	}
}

// TestUnreachable is the one failure: nothing answered.
func TestUnreachable(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	u := hs.URL
	hs.Close()
	_, err := Run(context.Background(), Config{Target: u + "/v1", Timeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "unreachable: target "+u+"/v1") {
		t.Errorf("err %v", err)
	}
	if _, err := Run(context.Background(), Config{Target: "localhost:8000"}); err == nil || !strings.Contains(err.Error(), "not the API's base URL") {
		t.Errorf("err %v", err)
	}
}
