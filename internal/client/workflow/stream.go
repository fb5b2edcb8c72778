package workflow

import (
	"bytes"
	"io"
	"time"

	"github.com/valyala/fastjson"

	"github.com/spate-dev/spate/internal/client/sse"
	"github.com/spate-dev/spate/internal/record"
)

// maxStreamText bounds the answer text a streamed step keeps.
const maxStreamText = 64 << 20

// readStream reads a streamed (SSE) step's response into st: the arrival
// of each content-bearing event (chat and completions chunks; Responses
// API text deltas), output tokens from the stream's usage when it reports
// them, else one per content event. It returns the answer text. Reads are
// stamped, and events counted late, by reads (see stepReads).
func readStream(body io.Reader, st *record.Step, reads *stepReads) ([]byte, error) {
	r := sse.NewReader(body, 0, reads.clock())
	var ev sse.Event
	var p fastjson.Parser
	var text []byte
	var last time.Time
	usage := -1
	for {
		if err := r.Next(&ev); err != nil {
			if err == io.EOF {
				break
			}
			return nil, err
		}
		if bytes.Equal(ev.Data, []byte("[DONE]")) {
			break
		}
		v, err := p.ParseBytes(ev.Data)
		if err != nil {
			continue // not JSON: not content
		}
		before := len(text)
		for _, ch := range v.GetArray("choices") {
			text = append(text, ch.GetStringBytes("text")...)
			text = append(text, ch.GetStringBytes("delta", "content")...)
			text = append(text, ch.GetStringBytes("delta", "reasoning_content")...)
			for _, tc := range ch.GetArray("delta", "tool_calls") {
				text = append(text, tc.GetStringBytes("function", "arguments")...)
			}
		}
		if t := string(v.GetStringBytes("type")); t == "response.output_text.delta" || t == "response.reasoning_text.delta" || t == "response.function_call_arguments.delta" {
			text = append(text, v.GetStringBytes("delta")...)
		}
		if u := v.Get("usage"); u != nil && u.Get("completion_tokens") != nil {
			usage = u.GetInt("completion_tokens")
		} else if u := v.Get("response", "usage"); u != nil && u.Get("output_tokens") != nil {
			usage = u.GetInt("output_tokens")
		}
		if len(text) == before {
			continue
		}
		if len(text) > maxStreamText {
			text = text[:maxStreamText]
		}
		if st.FirstToken.IsZero() {
			st.FirstToken = ev.At
		} else {
			st.Gaps = append(st.Gaps, ev.At.Sub(last))
		}
		last = ev.At
		reads.event(st.Chunks)
		st.Chunks++
	}
	st.Tokens = st.Chunks
	if usage >= 0 {
		st.Tokens, st.TokensFromUsage = usage, true
	}
	return text, nil
}
