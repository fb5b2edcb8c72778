package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/jitter"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
)

// responsesStream is a Responses API stream: the opening events at 0, a
// reasoning delta at first, n output_text deltas from first+itl every itl,
// then the done events and response.completed with its usage.
func responsesStream(first, itl time.Duration, n int) []step {
	ev := func(typ, rest string) string {
		return fmt.Sprintf("event: %s\ndata: {\"type\":%q%s}\n\n", typ, typ, rest)
	}
	steps := []step{
		{at: 0, raw: true, data: ev("response.created", `,"response":{"id":"r1","model":"m1","status":"in_progress","output":[]}`)},
		{at: 0, raw: true, data: ev("response.in_progress", `,"response":{"id":"r1","status":"in_progress"}`)},
		{at: 0, raw: true, data: ev("response.output_item.added", `,"output_index":0,"item":{"type":"reasoning"}`)},
		{at: first, raw: true, data: ev("response.reasoning_text.delta", `,"delta":"hmm"`)},
		{at: first, raw: true, data: ev("response.content_part.added", `,"part":{"type":"output_text","text":""}`)},
	}
	for i := 0; i < n; i++ {
		steps = append(steps, step{at: first + time.Duration(i+1)*itl, raw: true, data: ev("response.output_text.delta", fmt.Sprintf(`,"delta":" w%d"`, i))})
	}
	end := first + time.Duration(n)*itl
	return append(steps,
		step{at: end, raw: true, data: ev("response.output_text.done", `,"text":"..."`)},
		step{at: end, raw: true, data: ev("response.completed", fmt.Sprintf(`,"response":{"id":"r1","model":"m1","status":"completed","usage":{"input_tokens":12,"output_tokens":%d,"total_tokens":%d}}`, n+1, n+13))})
}

// TestResponsesStreamTimings proves the Responses API figures against a
// server with known timings: TTFT is the first generated delta (the
// reasoning one, at 40 ms), the answer's first token the first
// output_text delta (55 ms), ITL the gaps between deltas (15 ms), tokens
// the usage of response.completed, and the stream ends there without
// [DONE]; on both read paths.
func TestResponsesStreamTimings(t *testing.T) {
	const first, itl, n = 40 * time.Millisecond, 15 * time.Millisecond, 6
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/responses" || json.Unmarshal(b, &body) != nil {
			http.Error(w, "bad request "+r.URL.Path, 400)
			return
		}
		script(responsesStream(first, itl, n)...)(w, r)
	}))
	defer srv.Close()
	for _, net := range []bool{false, true} {
		c := newClient(t, srv.URL, func(cfg *Config) { cfg.API, cfg.NetHTTP = Responses, net })
		// The best of a few rounds, widened by the machine's timer
		// lateness meanwhile (package jitter), as TestTimingsAgainstKnownServer.
		jitter.BestOf(t, func() []string {
			probe := jitter.Start(time.Millisecond)
			var ttfts, answers, gaps []time.Duration
			for i := 0; i < 5; i++ {
				rec := do(c, &workload.Request{MaxTokens: 7, Messages: []workload.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}})
				if rec.Failed() {
					t.Fatalf("nethttp=%v: %s %s", net, rec.Err, rec.ErrMsg)
				}
				if rec.Chunks != n+1 || rec.OutputTokens != n+1 || rec.OutputSource != record.TokensUsage || rec.InputTokens != 12 || rec.Model != "m1" {
					t.Fatalf("nethttp=%v: chunks %d, tokens %d (%s), input %d, model %q", net, rec.Chunks, rec.OutputTokens, rec.OutputSource, rec.InputTokens, rec.Model)
				}
				tt, _ := rec.TTFT()
				ttfts, answers, gaps = append(ttfts, tt), append(answers, rec.FirstAnswer.Sub(rec.Sent)), append(gaps, rec.Gaps...)
			}
			late := probe.Stop()
			path := fmt.Sprintf("nethttp=%v: ", net)
			return offBy(late, 2,
				timing{path + "median TTFT", median(ttfts), first, 8 * time.Millisecond},
				timing{path + "median first answer", median(answers), first + itl, 8 * time.Millisecond},
				timing{path + "median ITL", median(gaps), itl, 5 * time.Millisecond})
		})
	}
	if body["instructions"] != "be brief" || body["max_output_tokens"] != float64(7) || body["stream"] != true {
		t.Errorf("request body %v", body)
	}
	if in, _ := json.Marshal(body["input"]); !strings.Contains(string(in), `"role":"user"`) || strings.Contains(string(in), "system") {
		t.Errorf("input %s", in)
	}
}

// TestResponsesFailures: response.failed, an error event, and a stream
// that ends without response.completed fail the request.
func TestResponsesFailures(t *testing.T) {
	for _, tc := range []struct{ name, events, want string }{
		{"failed", "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"boom\"}}}\n\n", "boom"},
		{"error", "data: {\"type\":\"error\",\"code\":\"x\",\"message\":\"bad thing\"}\n\n", "bad thing"},
		{"cut", "data: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\n", "response.completed"},
	} {
		srv := httptest.NewServer(script(step{raw: true, data: tc.events}))
		for _, net := range []bool{false, true} {
			c := newClient(t, srv.URL, func(cfg *Config) { cfg.API, cfg.NetHTTP = Responses, net })
			rec := do(c, &workload.Request{Prompt: "hi"})
			if !rec.Failed() || !strings.Contains(rec.ErrMsg, tc.want) {
				t.Errorf("%s (nethttp=%v): error %q %q, want one naming %q", tc.name, net, rec.Err, rec.ErrMsg, tc.want)
			}
		}
		srv.Close()
	}
}

// TestResponsesWhole reads a non-streamed Responses answer.
func TestResponsesWhole(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"id":"r","object":"response","status":"completed","model":"m1","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi there!"}]}],"usage":{"input_tokens":12,"output_tokens":3,"total_tokens":15}}`)
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, func(cfg *Config) { cfg.API, cfg.Stream = Responses, false })
	rec := do(c, &workload.Request{Prompt: "hi", KeepAnswer: true})
	if rec.Failed() || string(rec.Answer) != "Hi there!" || rec.OutputTokens != 3 || rec.InputTokens != 12 || rec.FirstToken != rec.End {
		t.Fatalf("record %+v", rec)
	}
}
