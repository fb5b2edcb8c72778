package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// The Responses API (POST /v1/responses) is served by translation: the
// request becomes a chat request served by the chat handler, whose answer
// is turned back into the Responses shape event by event, as it is
// written, so its timings are the chat stream's.

// respRequest is the part of a Responses API request the simulator reads.
type respRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    string          `json:"instructions"`
	MaxOutputTokens *int64          `json:"max_output_tokens"`
	Stream          *bool           `json:"stream"`
}

// respItem is one input item: a message whose content is a string or a
// list of parts.
type respItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type respPart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text"`
	ImageURL   string          `json:"image_url"`
	InputAudio json.RawMessage `json:"input_audio"`
}

// responsesToChat turns a Responses API request into the chat request that
// serves it, and reports whether it streams.
func responsesToChat(body []byte) ([]byte, bool, *apiError) {
	var rq respRequest
	if err := json.Unmarshal(body, &rq); err != nil {
		return nil, false, jsonError(err)
	}
	var msgs []map[string]any
	if rq.Instructions != "" {
		msgs = append(msgs, map[string]any{"role": "system", "content": rq.Instructions})
	}
	raw := bytes.TrimSpace(rq.Input)
	var s string
	var items []respItem
	switch {
	case len(raw) == 0 || isJSONNull(raw):
		return nil, false, badRequest("input", "input is required.")
	case json.Unmarshal(raw, &s) == nil:
		msgs = append(msgs, map[string]any{"role": "user", "content": s})
	case json.Unmarshal(raw, &items) == nil:
		if len(items) == 0 {
			return nil, false, badRequest("input", "input must hold at least one item.")
		}
		for i, it := range items {
			if it.Type != "" && it.Type != "message" {
				return nil, false, badRequest(fmt.Sprintf("input[%d].type", i), "input item type %q is not supported by spate sim; send messages.", it.Type)
			}
			if it.Role == "" {
				return nil, false, badRequest(fmt.Sprintf("input[%d].role", i), "input[%d].role is required.", i)
			}
			m := map[string]any{"role": it.Role}
			c := bytes.TrimSpace(it.Content)
			var text string
			var parts []respPart
			switch {
			case json.Unmarshal(c, &text) == nil:
				m["content"] = text
			case json.Unmarshal(c, &parts) == nil:
				var out []any
				for _, p := range parts {
					switch p.Type {
					case "input_text", "output_text":
						out = append(out, map[string]any{"type": "text", "text": p.Text})
					case "input_image":
						out = append(out, map[string]any{"type": "image_url", "image_url": map[string]string{"url": p.ImageURL}})
					case "input_audio":
						out = append(out, map[string]any{"type": "input_audio", "input_audio": p.InputAudio})
					default:
						return nil, false, badRequest(fmt.Sprintf("input[%d].content", i), "content part type %q is not supported.", p.Type)
					}
				}
				m["content"] = out
			default:
				return nil, false, badRequest(fmt.Sprintf("input[%d].content", i), "input[%d].content must be a string or a list of parts.", i)
			}
			msgs = append(msgs, m)
		}
	default:
		return nil, false, badRequest("input", "input must be a string or a list of input items.")
	}
	chat := map[string]any{"model": rq.Model, "messages": msgs}
	if rq.MaxOutputTokens != nil {
		chat["max_tokens"] = *rq.MaxOutputTokens
	}
	stream := rq.Stream != nil && *rq.Stream
	if stream {
		chat["stream"] = true
		chat["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, err := json.Marshal(chat)
	if err != nil {
		return nil, false, &apiError{status: http.StatusInternalServerError, message: err.Error(), typ: "server_error"}
	}
	return b, stream, nil
}

// handleResponses serves /v1/responses through chat, the chat handler.
func (s *Server) handleResponses(chat http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, aerr := readBody(w, r)
		if aerr != nil {
			s.fail(w, aerr)
			return
		}
		cb, stream, aerr := responsesToChat(body)
		if aerr != nil {
			s.fail(w, aerr)
			return
		}
		r2 := r.Clone(r.Context())
		r2.Body, r2.ContentLength = io.NopCloser(bytes.NewReader(cb)), int64(len(cb))
		r2.URL.Path = "/v1/chat/completions"
		tw := &respWriter{w: w, stream: stream}
		chat.ServeHTTP(tw, r2)
		tw.finish()
	}
}

// respWriter translates the chat handler's answer to the Responses shape.
// Errors (any status but 200) pass through: their JSON is the same.
type respWriter struct {
	w      http.ResponseWriter
	stream bool
	status int
	pend   []byte // a partly written chat event
	body   []byte // a whole (not streamed) chat answer
	seq    int
	id     string
	model  string
	text   []byte
	reason string // the chat finish_reason
	usage  json.RawMessage
	done   bool
}

func (t *respWriter) Header() http.Header { return t.w.Header() }

func (t *respWriter) WriteHeader(code int) {
	if t.status != 0 {
		return
	}
	t.status = code
	if code != http.StatusOK || t.stream {
		t.w.WriteHeader(code)
	}
}

// Flush implements http.Flusher.
func (t *respWriter) Flush() {
	if f, ok := t.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (t *respWriter) Write(b []byte) (int, error) {
	if t.status == 0 {
		t.WriteHeader(http.StatusOK)
	}
	switch {
	case t.status != http.StatusOK:
		return t.w.Write(b)
	case !t.stream:
		t.body = append(t.body, b...)
		return len(b), nil
	}
	t.pend = append(t.pend, b...)
	var out []byte
	for {
		i := bytes.Index(t.pend, []byte("\n\n"))
		if i < 0 {
			break
		}
		out = t.translate(out, bytes.TrimPrefix(t.pend[:i], []byte("data: ")))
		t.pend = t.pend[i+2:]
	}
	if len(out) > 0 {
		if _, err := t.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// event appends one Responses event of type typ with the fields of v.
func (t *respWriter) event(b []byte, typ string, v map[string]any) []byte {
	v["type"], v["sequence_number"] = typ, t.seq
	t.seq++
	j, _ := json.Marshal(v) // maps of plain values always encode
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: "...)
	b = append(b, j...)
	return append(b, "\n\n"...)
}

// response is the Responses object as it stands.
func (t *respWriter) response(status string) map[string]any {
	r := map[string]any{"id": t.id, "object": "response", "status": status, "model": t.model, "output": []any{}}
	if status != "in_progress" {
		r["output"] = []any{t.message("completed")}
		r["usage"] = t.usageObject()
		if status == "incomplete" {
			r["incomplete_details"] = map[string]string{"reason": "max_output_tokens"}
		}
	}
	return r
}

func (t *respWriter) message(status string) map[string]any {
	return map[string]any{"id": "msg_" + t.id, "type": "message", "role": "assistant", "status": status,
		"content": []any{map[string]any{"type": "output_text", "text": string(t.text), "annotations": []any{}}}}
}

// usageObject is the chat usage in the Responses names.
func (t *respWriter) usageObject() map[string]any {
	var u struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
	}
	_ = json.Unmarshal(t.usage, &u)
	return map[string]any{"input_tokens": u.Prompt, "output_tokens": u.Completion, "total_tokens": u.Prompt + u.Completion,
		"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0}}
}

// translate appends the Responses events of one chat event's data.
func (t *respWriter) translate(b, data []byte) []byte {
	if string(data) == "[DONE]" {
		t.done = true
		status := "completed"
		if t.reason == "length" {
			status = "incomplete"
		}
		b = t.event(b, "response.output_text.done", map[string]any{"item_id": "msg_" + t.id, "output_index": 0, "content_index": 0, "text": string(t.text)})
		b = t.event(b, "response.content_part.done", map[string]any{"item_id": "msg_" + t.id, "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": string(t.text)}})
		b = t.event(b, "response.output_item.done", map[string]any{"output_index": 0, "item": t.message("completed")})
		return t.event(b, "response."+status, map[string]any{"response": t.response(status)})
	}
	var c struct {
		ID      string `json:"id"`
		Model   string `json:"model"`
		Choices []struct {
			Delta struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"delta"`
			Finish *string `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	if json.Unmarshal(data, &c) != nil {
		return b
	}
	if t.id == "" {
		t.id, t.model = "resp_"+c.ID, c.Model
		b = t.event(b, "response.created", map[string]any{"response": t.response("in_progress")})
		b = t.event(b, "response.in_progress", map[string]any{"response": t.response("in_progress")})
		b = t.event(b, "response.output_item.added", map[string]any{"output_index": 0, "item": t.message("in_progress")})
		b = t.event(b, "response.content_part.added", map[string]any{"item_id": "msg_" + t.id, "output_index": 0, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": ""}})
	}
	if len(c.Usage) > 0 && !isJSONNull(c.Usage) {
		t.usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Finish != nil {
			t.reason = *ch.Finish
		}
		if ch.Delta.Content != "" {
			t.text = append(t.text, ch.Delta.Content...)
			b = t.event(b, "response.output_text.delta", map[string]any{"item_id": "msg_" + t.id, "output_index": 0, "content_index": 0, "delta": ch.Delta.Content})
		}
	}
	return b
}

// finish writes a whole answer in the Responses shape.
func (t *respWriter) finish() {
	if t.stream || t.status != http.StatusOK {
		return
	}
	var c struct {
		ID      string `json:"id"`
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			Finish string `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal(t.body, &c); err != nil || len(c.Choices) == 0 {
		writeError(t.w, http.StatusInternalServerError, "translating the answer: "+strconv.Quote(string(t.body)), "server_error", "", "")
		return
	}
	t.id, t.model, t.usage, t.text, t.reason = "resp_"+c.ID, c.Model, c.Usage, []byte(c.Choices[0].Message.Content), c.Choices[0].Finish
	status := "completed"
	if t.reason == "length" {
		status = "incomplete"
	}
	writeJSON(t.w, http.StatusOK, t.response(status))
}
