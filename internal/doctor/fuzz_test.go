package doctor

import (
	"net/http"
	"os"
	"testing"
)

// FuzzReadStream feeds the stream check any bytes as a streamed answer:
// it never panics, and never counts more content events than events.
func FuzzReadStream(f *testing.F) {
	for _, name := range []string{"llama.cpp-b4747-chat-stream", "llama.cpp-b4747-chat-logprobs-stream", "llm-d-inference-sim-v0.10.2-chat-stream"} {
		b, err := os.ReadFile("testdata/" + name + ".response")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\r\rdata: [DONE]\r\r"))
	f.Add([]byte("data: {\"error\":{\"message\":\"x\"}}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		a := answer{resp: &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}}, body: body}
		s := readStream(a)
		if s.content > s.events || s.events < 0 {
			t.Fatalf("%d content events of %d", s.content, s.events)
		}
	})
}
