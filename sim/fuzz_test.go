package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// FuzzParseRequest feeds arbitrary bodies to the request parsers and to the
// server: it must never panic, and must answer either a well-formed success
// or a 4xx with OpenAI's error JSON.
func FuzzParseRequest(f *testing.F) {
	for _, seed := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":3}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]}]}`,
		`{"prompt":"hello","max_tokens":2,"ignore_eos":true}`,
		`{"prompt":[1,2,3]}`, `{"prompt":[[1,2]]}`, `{"prompt":["a","b"]}`,
		`{"input":["a","b"],"dimensions":8,"encoding_format":"base64"}`,
		`{"messages":`, `null`, `[]`, `{"max_tokens":-1}`, `{"n":3}`, "\x00\xff", `{"messages":[{"role":"user","content":5}]}`,
		`{"messages":[{"role":"user","content":"x","tool_calls":[{"id":"1"}]}],"tools":[{"type":"function"}]}`,
		`{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}],"logprobs":true,"top_logprobs":20,"stream":true}`,
		`{"prompt":"x","logprobs":5}`, `{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":0}`,
	} {
		f.Add([]byte(seed))
	}
	cfg := Deterministic(0, 0, 3)
	cfg.Faults.MaxContext = 4096
	s, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })

	f.Fuzz(func(t *testing.T, body []byte) {
		for _, ep := range []endpoint{epChat, epCompletion} {
			for _, bs := range []int{0, 16} {
				req, aerr := parseGenRequest(ep, body, bs)
				if (req == nil) == (aerr == nil) {
					t.Fatalf("parseGenRequest: request %v, error %v", req, aerr)
				}
				if aerr != nil && (aerr.status < 400 || aerr.status > 499 || aerr.message == "") {
					t.Fatalf("parseGenRequest error %+v", aerr)
				}
				if req != nil && (req.promptTokens < 0 || req.maxTokens < 0) {
					t.Fatalf("parsed %+v", req)
				}
			}
		}
		_, _, _, _, _ = parseEmbedRequest(body, 8)

		for _, path := range []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings"} {
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			// Served here, not in a goroutine of its own per path
			// (starting one and growing its stack per path per exec);
			// a hang panics with every stack, which fails the fuzz run
			// and keeps the input.
			watchdog := time.AfterFunc(10*time.Second, func() {
				buf := make([]byte, 1<<20)
				panic(fmt.Sprintf("%s: no answer after 10 s for body %q\n%s", path, body, buf[:runtime.Stack(buf, true)]))
			})
			s.ServeHTTP(rec, r)
			watchdog.Stop()
			switch {
			case rec.Code == http.StatusOK:
				ct := rec.Header().Get("Content-Type")
				if strings.HasPrefix(ct, "text/event-stream") {
					if !strings.HasSuffix(rec.Body.String(), "data: [DONE]\n\n") {
						t.Fatalf("%s: stream without [DONE]: %q", path, rec.Body.String())
					}
				} else if !json.Valid(rec.Body.Bytes()) {
					t.Fatalf("%s: 200 with invalid JSON: %q", path, rec.Body.String())
				}
			case rec.Code >= 400 && rec.Code < 500:
				var e errorBody
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
					t.Fatalf("%s: %d without OpenAI error JSON: %q", path, rec.Code, rec.Body.String())
				}
			default:
				t.Fatalf("%s: status %d for body %q", path, rec.Code, body)
			}
		}
	})
}
