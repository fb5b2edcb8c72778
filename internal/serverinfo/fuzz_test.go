package serverinfo

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzRead feeds any listing and headers: Read never panics, and what it
// keeps of the server's text is short and printable.
func FuzzRead(f *testing.F) {
	f.Add("llama.cpp", "", `{"object":"list","data":[{"id":"tiny-llama","owned_by":"llamacpp","meta":{"n_ctx_train":8192}}]}`, "")
	f.Add("fasthttp", "Sat, 05 Dec 2026 20:55:35 GMT", `{"data":[{"id":"a","owned_by":"vllm","max_model_len":65536}]}`, "a")
	f.Add("llama.cpp\x1b[31m", "garbage", `{"data":[{"max_model_len":-5}]}`, "")
	f.Fuzz(func(t *testing.T, server, date, body, model string) {
		resp := &http.Response{Proto: "HTTP/1.1", Header: http.Header{"Server": {server}, "Date": {date}}}
		now := time.Now()
		in := Read(resp, []byte(body), model, now, now.Add(time.Millisecond))
		if len(in.Evidence) > 200 || strings.ContainsAny(in.Evidence, "\x1b\r\n") {
			t.Fatalf("evidence %q", in.Evidence)
		}
		if in.MaxContext < 0 {
			t.Fatalf("context %d", in.MaxContext)
		}
		_ = in.Clock()
	})
}
