package serverinfo

import (
	"net/http"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	sent := time.Date(2026, 12, 6, 12, 0, 0, 200e6, time.UTC)
	got := sent.Add(100 * time.Millisecond) // mid: 12:00:00.250
	for _, tc := range []struct {
		name, server, date, body, model string
		software, evidence, ctxFrom     string
		maxCtx                          int
		offset, errS                    float64 // -1: no clock
	}{
		{"llama.cpp b4747 (recorded)", "llama.cpp", "",
			`{"object":"list","data":[{"id":"tiny-llama","object":"model","created":1796504126,"owned_by":"llamacpp","meta":{"vocab_type":1,"n_vocab":32000,"n_ctx_train":8192}}]}`, "",
			"llama.cpp", "Server: llama.cpp, owned_by: llamacpp", "meta.n_ctx_train", 8192, -1, -1},
		{"vLLM-compatible (recorded), the second model", "fasthttp", "Sat, 05 Dec 2026 20:55:35 GMT",
			`{"object":"list","data":[{"id":"test-model","owned_by":"vllm","max_model_len":65536},{"id":"sim-model","owned_by":"vllm","max_model_len":4096}]}`, "sim-model",
			"vLLM", "owned_by: vllm", "max_model_len", 4096, 0, 0},
		{"a clock 3 s ahead", "", "Sun, 06 Dec 2026 12:00:03 GMT", `{"data":[{"id":"m","owned_by":"someone"}]}`, "",
			"", "", "", 0, 3.25, 0.55},
		{"a clock 2 s behind", "", "Sun, 06 Dec 2026 11:59:58 GMT", `{"data":[]}`, "",
			"", "", "", 0, -1.75, 0.55},
		{"no listing", "uvicorn", "", `not json`, "", "", "", "", 0, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &http.Response{Proto: "HTTP/1.1", Header: http.Header{}}
			if tc.server != "" {
				resp.Header.Set("Server", tc.server)
			}
			if tc.date != "" {
				resp.Header.Set("Date", tc.date)
			}
			in := Read(resp, []byte(tc.body), tc.model, sent, got)
			if in.Software != tc.software || in.Evidence != tc.evidence || in.MaxContext != tc.maxCtx || in.MaxContextFrom != tc.ctxFrom || in.HTTP != "HTTP/1.1" {
				t.Errorf("got %+v", in)
			}
			switch {
			case tc.offset == -1 && in.ClockOffsetS != nil:
				t.Errorf("a clock offset %v without a Date", *in.ClockOffsetS)
			case tc.offset == -1:
			case tc.name[0] == 'v': // the recorded Date is a day before: only its presence counts
				if in.ClockOffsetS == nil {
					t.Error("no clock offset")
				}
			case in.ClockOffsetS == nil || *in.ClockOffsetS != tc.offset || *in.ClockErrorS != tc.errS:
				t.Errorf("clock %v ± %v, want %v ± %v", in.ClockOffsetS, in.ClockErrorS, tc.offset, tc.errS)
			}
		})
	}
}
