package openai

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/llmtest"
)

// replay serves resp byte for byte (llmtest.Replay) until the test ends.
func replay(t *testing.T, resp []byte) string {
	t.Helper()
	s := llmtest.NewReplay(resp)
	t.Cleanup(s.Close)
	return s.URL
}

// recording is a response recorded byte for byte from a real server
// (testdata/real-servers, copied from the recordings of issue 35:
// llama.cpp's llama-server b4747 and llm-d-inference-sim v0.10.2).
func recording(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "real-servers", name+".response"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sseWith is a 200 SSE response with body, framed by Content-Length on a
// keep-alive connection.
func sseWith(body string) []byte {
	return []byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
}

// h2Preface is what an HTTP/2-only server sends an HTTP/1.1 client: its
// SETTINGS frame (MAX_CONCURRENT_STREAMS 250, INITIAL_WINDOW_SIZE 1 MiB),
// then a GOAWAY with PROTOCOL_ERROR (RFC 9113 §6.5, §6.8).
const h2Preface = "\x00\x00\x0c\x04\x00\x00\x00\x00\x00" + "\x00\x03\x00\x00\x00\xfa" + "\x00\x04\x00\x10\x00\x00" +
	"\x00\x00\x08\x07\x00\x00\x00\x00\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x01"

// gzipped is a 200 SSE response with body gzip-compressed, as a server
// that compresses unasked sends it.
func gzipped(body string) []byte {
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	_, _ = w.Write([]byte(body))
	_ = w.Close()
	head := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n", z.Len())
	return append([]byte(head), z.Bytes()...)
}

// jsonWith is a 200 JSON response with body.
func jsonWith(body string) []byte {
	return []byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
}

const (
	wireChunkA = `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`
	wireChunkB = `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":" world"},"finish_reason":"stop"}]}`
	wireUsage  = `{"id":"x","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}`
)

// TestOneReadingOfTheWire runs the reactor's raw HTTP reader and net/http
// (SPATE_NETHTTP=1, and every https:// target) over the same byte
// streams, each served whole by a loopback server: recorded responses of
// real servers, and what a server may send around a valid response (stray
// bytes after it, CR-only or mixed line ends, a JSON error with a 200).
// Both must give the outcome the table says: the same kind, the server's
// message kept, and for a success the same tokens. Before, the raw reader
// failed a complete response followed by a stray CRLF as stream_broken
// ("data after the end of the response") where net/http succeeded, both
// failed CR-only streams as bad_response, and a JSON error body with a
// 200 lost the server's message.
func TestOneReadingOfTheWire(t *testing.T) {
	llamaChat := recording(t, "llama.cpp-b4747-chat-stream")
	for _, tc := range []struct {
		name    string
		resp    []byte
		api     string
		want    record.ErrorKind
		msg     string // in the error message
		out, in int    // tokens of a success
	}{
		{"llama.cpp chat stream", llamaChat, Chat, record.OK, "", 12, 54},
		{"llama.cpp completions stream", recording(t, "llama.cpp-b4747-completions-stream"), Completions, record.OK, "", 10, 6},
		{"llama.cpp prompt over the context", recording(t, "llama.cpp-b4747-chat-too-long"), Chat, record.OK, "", 8, 2004},
		{"llama.cpp logprobs stream", recording(t, "llama.cpp-b4747-chat-logprobs-stream"), Chat, record.OK, "", 6, 31},
		{"llama.cpp usage unasked", recording(t, "llama.cpp-b4747-chat-stream-no-usage-option"), Chat, record.OK, "", 8, 31},
		{"llama.cpp ignore_eos", recording(t, "llama.cpp-b4747-completions-ignore-eos"), Completions, record.OK, "", 10, 5},
		{"llama.cpp 500 with a JSON error", recording(t, "llama.cpp-b4747-chat-bad-json-field"), Chat, "http_500", "Failed to parse messages", 0, 0},
		{"vLLM-compatible chat stream", recording(t, "llm-d-inference-sim-v0.10.2-chat-stream"), Chat, record.OK, "", 1, 11},
		{"vLLM-compatible completions stream", recording(t, "llm-d-inference-sim-v0.10.2-completions-stream"), Completions, record.OK, "", 8, 4},

		// A complete response, then bytes nobody asked for.
		{"recorded stream then a CRLF", append(llamaChat[:len(llamaChat):len(llamaChat)], "\r\n"...), Chat, record.OK, "", 12, 54},
		{"recorded stream then garbage", append(llamaChat[:len(llamaChat):len(llamaChat)], "HTTP/1.1 200 OK\r\n\r\nunasked"...), Chat, record.OK, "", 12, 54},
		{"keep-alive stream then a CRLF", append(sseWith("data: "+wireChunkA+"\n\ndata: "+wireChunkB+"\n\ndata: "+wireUsage+"\n\ndata: [DONE]\n\n"), "\r\n"...), Chat, record.OK, "", 2, 3},

		// Line ends the SSE specification allows.
		{"CR-only line ends", sseWith("data: " + wireChunkA + "\r\rdata: " + wireChunkB + "\r\rdata: " + wireUsage + "\r\rdata: [DONE]\r\r"), Chat, record.OK, "", 2, 3},
		{"mixed line ends", sseWith(": hi\rdata: " + wireChunkA + "\r\n\ndata: " + wireChunkB + "\n\r\ndata: " + wireUsage + "\r\rdata: [DONE]\r\n\r\n"), Chat, record.OK, "", 2, 3},

		// A JSON error where the stream was due, or in it.
		{"200 with an OpenAI error body", jsonWith(`{"error":{"message":"boom: the engine is gone","type":"server_error","code":500}}`), Chat, record.BadResponse, "boom: the engine is gone", 0, 0},
		{"200 with a vLLM error body", jsonWith(`{"object":"error","message":"This model's maximum context length is 8 tokens","type":"BadRequestError","param":null,"code":400}`), Chat, record.BadResponse, "maximum context length is 8 tokens", 0, 0},
		{"200 with a pretty-printed error body", jsonWith("{\n  \"error\": {\n    \"message\": \"slow down\"\n  }\n}\n"), Chat, record.BadResponse, "slow down", 0, 0},
		{"vLLM error event mid-stream", sseWith("data: " + wireChunkA + "\n\ndata: {\"object\":\"error\",\"message\":\"engine died\",\"code\":500}\n\n"), Chat, record.StreamBroken, "engine died", 0, 0},
		{"JSON error after the events", sseWith("data: " + wireChunkA + "\n\n{\"error\":{\"message\":\"overloaded\"}}\n"), Chat, record.StreamBroken, "overloaded", 0, 0},
		{"stream without [DONE]", sseWith("data: " + wireChunkA + "\n\n"), Chat, record.StreamBroken, "without data: [DONE]", 0, 0},
		// A body compressed though identity was asked (both readers
		// send Accept-Encoding: identity).
		{"gzip body unasked", gzipped("data: " + wireChunkA + "\n\ndata: [DONE]\n\n"), Chat, record.BadResponse, "compressed the body (Content-Encoding: gzip) though spate asked for identity", 0, 0},
		{"br body unasked", []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: br\r\nContent-Length: 4\r\n\r\n\x8b\x01\x80\x03"), Chat, record.BadResponse, "Content-Encoding: br", 0, 0},
		{"identity named", []byte(strings.Replace(string(sseWith("data: "+wireChunkA+"\n\ndata: "+wireChunkB+"\n\ndata: "+wireUsage+"\n\ndata: [DONE]\n\n")), "\r\n\r\n", "\r\nContent-Encoding: identity\r\n\r\n", 1)), Chat, record.OK, "", 2, 3},
		// An HTTP/2-only server's preface (SETTINGS, then GOAWAY) where
		// the HTTP/1.1 response was due.
		{"HTTP/2 only", []byte(h2Preface), Chat, record.BadResponse, "speaks HTTP/2 only", 0, 0},
		{"HTML, not a stream", []byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 14\r\n\r\n<html>hi</html"), Chat, record.BadResponse, "it began <html>hi</html", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			readBoth(t, tc.resp, tc.api, true, tc.want, tc.msg, tc.out, tc.in)
		})
	}
}

// TestOneReadingOfWholeResponses is TestOneReadingOfTheWire for
// non-streamed responses: recorded whole answers of real servers (one
// with an empty header value, each with Connection: close) read alike by
// the reactor and by net/http.
func TestOneReadingOfWholeResponses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		resp    []byte
		api     string
		out, in int
	}{
		{"llama.cpp chat", recording(t, "llama.cpp-b4747-chat-whole"), Chat, 8, 31},
		{"llama.cpp completions", recording(t, "llama.cpp-b4747-completions-whole"), Completions, 10, 6},
		{"vLLM-compatible chat", recording(t, "llm-d-inference-sim-v0.10.2-chat-whole"), Chat, 3, 8},
		{"keep-alive JSON", jsonWith(`{"model":"m","choices":[{"message":{"role":"assistant","content":"Hello world"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`), Chat, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			readBoth(t, tc.resp, tc.api, false, record.OK, "", tc.out, tc.in)
		})
	}
}

// readBoth reads resp, served whole by a loopback server, with the
// reactor's raw reader and with net/http, and checks both give the kind
// want with msg in its message and, for a success, out and in tokens,
// and that they agree.
func readBoth(t *testing.T, resp []byte, api string, stream bool, want record.ErrorKind, msg string, out, in int) {
	t.Helper()
	url := replay(t, resp)
	var got [2]*record.Record
	for i, netHTTP := range []bool{false, true} {
		if !netHTTP && !rawhttp.Available() {
			continue
		}
		c := newClient(t, url, func(c *Config) { c.API, c.NetHTTP, c.Stream = api, netHTTP, stream })
		if (c.raw != nil) == netHTTP {
			t.Fatalf("NetHTTP %v: the reactor path is %v", netHTTP, c.raw != nil)
		}
		rec := do(c, &workload.Request{Prompt: "p", MaxTokens: 16})
		c.Close()
		got[i] = rec
		reader := map[bool]string{false: "raw reader", true: "net/http"}[netHTTP]
		if rec.Err != want || !strings.Contains(rec.ErrMsg, msg) {
			t.Errorf("%s: %q %q, want %q with %q", reader, rec.Err, rec.ErrMsg, want, msg)
		}
		if want == record.OK && (rec.OutputTokens != out || rec.InputTokens != in || rec.Chunks == 0) {
			t.Errorf("%s: %d output tokens, %d input, %d chunks; want %d and %d", reader, rec.OutputTokens, rec.InputTokens, rec.Chunks, out, in)
		}
	}
	if a, b := got[0], got[1]; a != nil && (a.Err != b.Err || a.Chunks != b.Chunks || a.OutputTokens != b.OutputTokens || a.FinishReason != b.FinishReason || string(a.Answer) != string(b.Answer)) {
		t.Errorf("the readers differ: raw %q, %d chunks, %d tokens, finish %q; net/http %q, %d chunks, %d tokens, finish %q",
			a.Err, a.Chunks, a.OutputTokens, a.FinishReason, b.Err, b.Chunks, b.OutputTokens, b.FinishReason)
	}
}

// TestWholeAnswerErrorKeepsMessage: a non-streamed request answered 200
// with a JSON error keeps the server's message (it failed as empty_output,
// "the response carried no generated content").
func TestWholeAnswerErrorKeepsMessage(t *testing.T) {
	for _, tc := range []struct{ body, msg string }{
		{`{"error":{"message":"boom: the engine is gone","type":"server_error"}}`, "boom: the engine is gone"},
		{`{"error":"quota exceeded"}`, "quota exceeded"},
		{`{"object":"error","message":"This model's maximum context length is 8 tokens","type":"BadRequestError","code":400}`, "maximum context length is 8 tokens"},
	} {
		c := newClient(t, replay(t, jsonWith(tc.body)), func(c *Config) { c.Stream = false })
		rec := do(c, &workload.Request{Prompt: "p"})
		c.Close()
		if rec.Err != record.BadResponse || !strings.Contains(rec.ErrMsg, tc.msg) {
			t.Errorf("%s: %q %q, want %q with %q", tc.body, rec.Err, rec.ErrMsg, record.BadResponse, tc.msg)
		}
	}
}

// TestAsksForIdentity: both readers ask for the body as it is
// (Accept-Encoding: identity; before, neither said anything, and a server
// was free to compress), unless the run's headers ask otherwise.
func TestAsksForIdentity(t *testing.T) {
	got := make(chan string, 1)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Accept-Encoding")
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: " + wireChunkA + "\n\ndata: [DONE]\n\n"))
	}))
	defer s.Close()
	for _, netHTTP := range []bool{false, true} {
		for _, own := range []string{"", "br"} {
			c := newClient(t, s.URL, func(c *Config) {
				c.NetHTTP = netHTTP
				if own != "" {
					c.Headers = http.Header{"Accept-Encoding": {own}}
				}
			})
			rec := do(c, &workload.Request{Prompt: "p", MaxTokens: 16})
			c.Close()
			want := "identity"
			if own != "" {
				want = own
			}
			if ae := <-got; ae != want || rec.Failed() {
				t.Errorf("net/http %v, own %q: Accept-Encoding %q (%s %s), want %q", netHTTP, own, ae, rec.Err, rec.ErrMsg, want)
			}
		}
	}
}

// FuzzWholeBody: any bytes as a non-streamed answer (chat or completions)
// are read without a panic, into a success with the answer's text and at
// most one chunk, or a failure with a message.
func FuzzWholeBody(f *testing.F) {
	for _, name := range []string{"llama.cpp-b4747-chat-whole", "llama.cpp-b4747-completions-whole", "llm-d-inference-sim-v0.10.2-chat-whole"} {
		b, err := os.ReadFile(filepath.Join("testdata", "real-servers", name+".response"))
		if err != nil {
			f.Fatal(err)
		}
		if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
			f.Add(b[i+4:])
		}
	}
	f.Add([]byte(`{"error":{"message":"boom"}}`))
	f.Add([]byte(`{"choices":[{"message":{"content":"a","reasoning_content":"b","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}}]}`))
	f.Add([]byte(`{"usage":{"prompt_tokens":-1}}`))
	c, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", API: Chat, Model: "m", NetHTTP: true, MaxText: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rec := &record.Record{}
		rec.Reset()
		rec.End = time.Unix(1, 0)
		st := &stream{}
		err := c.whole(st, b, rec, true)
		if err != nil {
			if _, msg, ok := kindOf(err); ok && msg == "" {
				t.Fatalf("a failure without a message: %v", err)
			}
			return
		}
		if rec.Chunks > 1 || (rec.Chunks == 1) != (len(st.text) > 0) {
			t.Fatalf("%d chunks for %d bytes of text", rec.Chunks, len(st.text))
		}
		if rec.Chunks == 1 && !rec.FirstToken.Equal(rec.End) {
			t.Fatalf("first token %v, end %v: a whole answer's first token is its end", rec.FirstToken, rec.End)
		}
	})
}
