package openai

import (
	"encoding/json"
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/internal/workload"
)

// Responses is OpenAI's Responses API: POST /responses, streamed as typed
// events (event: response.output_text.delta, ...) that end with
// response.completed, not [DONE].
const Responses = "responses"

// responsesBody is a Responses API request: the chat messages become the
// input items, a system message the instructions.
type responsesBody struct {
	Model           string          `json:"model"`
	Instructions    string          `json:"instructions,omitempty"`
	Input           any             `json:"input"`
	MaxOutputTokens int             `json:"max_output_tokens,omitempty"`
	Stream          bool            `json:"stream,omitempty"`
	Tools           json.RawMessage `json:"tools,omitempty"`
	User            string          `json:"user,omitempty"`
}

type responsesItem struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type responsesPart struct {
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	ImageURL   string          `json:"image_url,omitempty"`
	InputAudio *responsesAudio `json:"input_audio,omitempty"`
}

type responsesAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

// responsesRequest encodes req as a Responses API request.
func (c *Client) responsesRequest(req *workload.Request) ([]byte, error) {
	b := responsesBody{Model: c.cfg.Model, MaxOutputTokens: req.MaxTokens, Stream: c.cfg.Stream, Tools: req.Tools, User: req.Session}
	if len(req.Messages) == 0 {
		b.Input = req.Prompt
		return json.Marshal(b)
	}
	var items []responsesItem
	for _, m := range req.Messages {
		if m.Role == "system" && b.Instructions == "" && len(items) == 0 {
			b.Instructions = m.Text()
			continue
		}
		if len(m.Parts) == 0 {
			items = append(items, responsesItem{Role: m.Role, Content: m.Content})
			continue
		}
		parts := make([]responsesPart, 0, len(m.Parts))
		for _, p := range m.Parts {
			switch p.Type {
			case "image_url":
				parts = append(parts, responsesPart{Type: "input_image", ImageURL: p.ImageURL})
			case "input_audio":
				parts = append(parts, responsesPart{Type: "input_audio", InputAudio: &responsesAudio{Data: p.AudioData, Format: p.AudioFormat}})
			default:
				typ := "input_text"
				if m.Role == "assistant" {
					typ = "output_text"
				}
				parts = append(parts, responsesPart{Type: typ, Text: p.Text})
			}
		}
		items = append(items, responsesItem{Role: m.Role, Content: parts})
	}
	b.Input = items
	return json.Marshal(b)
}

// responsesEvent reads one streamed Responses API event (keyed on its JSON
// "type", which gateways that send data-only streams keep). Generated
// content is output_text and refusal deltas (answer), reasoning text and
// reasoning summary deltas (reasoning) and function call argument deltas
// (answer, a tool call); response.completed and response.incomplete end
// the stream with the usage; error and response.failed fail it.
func (c *Client) responsesEvent(st *stream, data []byte, rec *record.Record, keep bool) (reasoning, answer, done bool, err error) {
	v, err := st.parser.ParseBytes(data)
	if err != nil {
		return false, false, false, failure(record.BadResponse, "bad event data %s: %s", scrub.Text(string(data), 80), err)
	}
	switch typ := string(v.GetStringBytes("type")); typ {
	case "response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta":
		d := v.GetStringBytes("delta")
		if len(d) == 0 {
			return false, false, false, nil
		}
		st.text = append(st.text, d...)
		if keep {
			rec.Answer = append(rec.Answer, d...)
		}
		return false, true, false, nil
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		d := v.GetStringBytes("delta")
		if len(d) == 0 {
			return false, false, false, nil
		}
		st.text = append(st.text, d...)
		return true, false, false, nil
	case "response.output_item.added":
		if string(v.GetStringBytes("item", "type")) == "function_call" {
			rec.ToolCalls++
		}
	case "response.created", "response.in_progress":
		return false, false, false, c.model(rec, v.GetStringBytes("response", "model"))
	case "response.completed", "response.incomplete":
		if err := c.model(rec, v.GetStringBytes("response", "model")); err != nil {
			return false, false, false, err
		}
		if u := v.Get("response", "usage"); u != nil && u.Type() == fastjson.TypeObject {
			if err := readResponsesUsage(u, rec); err != nil {
				return false, false, false, err
			}
		}
		return false, false, true, nil
	case "response.failed":
		return false, false, false, fmt.Errorf("response.failed: %s", scrub.Text(v.Get("response", "error").String(), 300))
	case "error":
		return false, false, false, fmt.Errorf("error event: %s", scrub.Text(string(data), 300))
	}
	return false, false, false, nil
}

// readResponsesUsage takes a Responses usage object (input_tokens,
// output_tokens, output_tokens_details) into rec, with readUsage's checks.
func readResponsesUsage(u *fastjson.Value, rec *record.Record) error {
	var o fastjson.Arena
	m := o.NewObject()
	if v := u.Get("input_tokens"); v != nil {
		m.Set("prompt_tokens", v)
	}
	if v := u.Get("output_tokens"); v != nil {
		m.Set("completion_tokens", v)
	}
	if v := u.Get("output_tokens_details"); v != nil {
		m.Set("completion_tokens_details", v)
	}
	return readUsage(m, rec)
}

// readResponsesWhole reads a non-streamed Responses API answer: the text
// of its message items' output_text parts, reasoning items' text, function
// calls' arguments, and its usage.
func (c *Client) readResponsesWhole(st *stream, v *fastjson.Value, rec *record.Record, keep bool) error {
	if s := string(v.GetStringBytes("status")); s == "failed" {
		return fmt.Errorf("response failed: %s", scrub.Text(v.Get("error").String(), 300))
	}
	if err := c.model(rec, v.GetStringBytes("model")); err != nil {
		return err
	}
	if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		if err := readResponsesUsage(u, rec); err != nil {
			return err
		}
	}
	for _, item := range v.GetArray("output") {
		switch string(item.GetStringBytes("type")) {
		case "message":
			for _, p := range item.GetArray("content") {
				t := p.GetStringBytes("text")
				if len(t) == 0 {
					t = p.GetStringBytes("refusal")
				}
				st.text = append(st.text, t...)
				if keep {
					rec.Answer = append(rec.Answer, t...)
				}
			}
		case "reasoning":
			for _, p := range append(item.GetArray("content"), item.GetArray("summary")...) {
				st.text = append(st.text, p.GetStringBytes("text")...)
			}
			rec.FirstReasoning = rec.End
		case "function_call":
			rec.ToolCalls++
			a := item.GetStringBytes("arguments")
			st.text = append(st.text, a...)
			if keep {
				rec.Answer = append(rec.Answer, a...)
			}
		}
	}
	if len(st.text) > 0 {
		rec.FirstToken, rec.FirstAnswer = rec.End, rec.End
		rec.Chunks = 1
		st.bounds = append(st.bounds, len(st.text))
	}
	return nil
}
