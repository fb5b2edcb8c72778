package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// maxRequestBody bounds the size of a request body.
const maxRequestBody = 32 << 20

// maxTokensLimit bounds max_tokens when no context window is configured.
const maxTokensLimit = 1 << 20

// endpoint is the generation API a request came in on.
type endpoint int

const (
	epChat endpoint = iota
	epCompletion
)

// genRequest is a parsed chat or completions request.
type genRequest struct {
	ep           endpoint
	model        string   // as sent ("" if absent)
	promptTokens int      // approximate cl100k count, chat overhead included
	blockKeys    []uint64 // prefix-cache keys (engine mode with prefix caching)
	maxTokens    int      // 0: not given
	ignoreEOS    bool
	stream       bool
	includeUsage bool
	// topLogprobs is the top logprobs asked for per token, −1 when the
	// request asks for no logprobs (see logprobs.go).
	topLogprobs int
	// turn is a chat request's turn: the assistant messages before it.
	turn int
}

// apiError is an error answered with OpenAI's error JSON.
type apiError struct {
	status  int
	message string
	typ     string
	param   string
	code    string
}

// Error returns the message sent to the client.
func (e *apiError) Error() string { return e.message }

func badRequest(param, format string, a ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, message: fmt.Sprintf(format, a...), typ: "invalid_request_error", param: param}
}

// wireRequest is the JSON body of /v1/chat/completions and /v1/completions.
type wireRequest struct {
	Model               string          `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
	Stream              *bool           `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS *bool           `json:"ignore_eos"`
	N         *int64          `json:"n"`
	Tools     json.RawMessage `json:"tools"`
	// Logprobs is a bool for chat, a number of top logprobs for
	// completions; TopLogprobs is chat's number.
	Logprobs    json.RawMessage `json:"logprobs"`
	TopLogprobs *int64          `json:"top_logprobs"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type wirePart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// parseGenRequest parses and validates a generation request body. blockSize
// > 0 also computes the prompt's prefix-cache keys.
func parseGenRequest(ep endpoint, body []byte, blockSize int) (*genRequest, *apiError) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, jsonError(err)
	}
	r := &genRequest{ep: ep, model: w.Model}
	if aerr := r.readLogprobs(&w); aerr != nil {
		return nil, aerr
	}
	if w.Stream != nil {
		r.stream = *w.Stream
	}
	if w.StreamOptions != nil {
		r.includeUsage = w.StreamOptions.IncludeUsage
	}
	if w.IgnoreEOS != nil {
		r.ignoreEOS = *w.IgnoreEOS
	}
	if w.N != nil && *w.N != 1 {
		if *w.N < 1 {
			return nil, badRequest("n", "n must be at least 1, got %d.", *w.N)
		}
		return nil, badRequest("n", "n = %d is not supported by spate sim; it serves one choice per request.", *w.N)
	}
	for _, mt := range []struct {
		name string
		v    *int64
	}{{"max_tokens", w.MaxTokens}, {"max_completion_tokens", w.MaxCompletionTokens}} {
		if mt.v == nil {
			continue
		}
		if *mt.v < 1 {
			return nil, badRequest(mt.name, "%s must be at least 1, got %d.", mt.name, *mt.v)
		}
		if *mt.v > maxTokensLimit {
			return nil, badRequest(mt.name, "%s must be at most %d, got %d.", mt.name, maxTokensLimit, *mt.v)
		}
		r.maxTokens = int(*mt.v) // max_completion_tokens, read last, wins
	}

	p := newPromptScanner(blockSize)
	switch ep {
	case epChat:
		if len(w.Messages) == 0 {
			return nil, badRequest("messages", "messages must be a non-empty array.")
		}
		for i, m := range w.Messages {
			if m.Role == "" {
				return nil, badRequest(fmt.Sprintf("messages.[%d].role", i), "messages[%d].role is required.", i)
			}
			if m.Role == "assistant" {
				r.turn++
			}
			p.mark('m')
			p.feed(m.Role)
			p.add(chatPerMessage - 1) // the role's own token is counted by feed
			if m.Name != "" {
				p.feed(m.Name)
				p.add(chatPerName)
			}
			if err := feedContent(&p, m.Content, i); err != nil {
				return nil, err
			}
			if len(m.ToolCalls) > 0 && !isJSONNull(m.ToolCalls) {
				p.feed(string(m.ToolCalls))
			}
		}
		if len(w.Tools) > 0 && !isJSONNull(w.Tools) {
			p.feed(string(w.Tools))
		}
		p.add(chatReplyPriming)
	case epCompletion:
		if err := feedPrompt(&p, w.Prompt); err != nil {
			return nil, err
		}
	}
	r.promptTokens = p.tokens
	r.blockKeys = p.keys
	return r, nil
}

// feedContent scans a chat message's content: a string, null, or an array of
// parts (text parts are scanned, image and audio parts count a fixed size).
func feedContent(p *promptScanner, raw json.RawMessage, i int) *apiError {
	param := fmt.Sprintf("messages.[%d].content", i)
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || isJSONNull(raw) {
		return nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return badRequest(param, "%s: %v", param, err)
		}
		p.feed(s)
		return nil
	case '[':
		var parts []wirePart
		if err := json.Unmarshal(raw, &parts); err != nil {
			return badRequest(param, "%s: %v", param, err)
		}
		for _, part := range parts {
			switch part.Type {
			case "text", "input_text":
				p.feed(part.Text)
			case "image_url", "input_image", "input_audio", "audio_url", "video_url":
				p.mark('i')
				p.add(imagePartTokens)
			default:
				return badRequest(param, "%s: unsupported content part type %q.", param, part.Type)
			}
		}
		return nil
	}
	return badRequest(param, "%s must be a string, an array of content parts or null.", param)
}

// feedPrompt scans a completions prompt: a string, an array of one string, an
// array of token ids or an array of one array of token ids.
func feedPrompt(p *promptScanner, raw json.RawMessage) *apiError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || isJSONNull(raw) {
		return badRequest("prompt", "prompt is required.")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		p.feed(s)
		return nil
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		if len(ss) != 1 {
			return badRequest("prompt", "spate sim serves one prompt per request, got %d.", len(ss))
		}
		p.feed(ss[0])
		return nil
	}
	var ids []int64
	if json.Unmarshal(raw, &ids) == nil {
		feedIDs(p, ids)
		return nil
	}
	var idss [][]int64
	if json.Unmarshal(raw, &idss) == nil {
		if len(idss) != 1 {
			return badRequest("prompt", "spate sim serves one prompt per request, got %d.", len(idss))
		}
		feedIDs(p, idss[0])
		return nil
	}
	return badRequest("prompt", "prompt must be a string, an array of strings, or an array of token ids.")
}

// feedIDs counts a pre-tokenised prompt: one token per id.
func feedIDs(p *promptScanner, ids []int64) {
	var buf [24]byte
	for _, id := range ids {
		p.hashBytes(string(strconv.AppendInt(buf[:0], id, 10)))
		p.mark(',')
		p.add(1)
	}
}

func isJSONNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// jsonError turns a JSON decoding error into a 400 with a useful message.
func jsonError(err error) *apiError {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return badRequest("", "Invalid JSON body: %v (at byte %d).", se, se.Offset)
	case errors.As(err, &te):
		return badRequest(te.Field, "Invalid type for '%s': expected %s, got %s.", te.Field, te.Type, te.Value)
	}
	return badRequest("", "Invalid JSON body: %v.", err)
}

// errorBody is OpenAI's error JSON.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// writeError answers status with OpenAI's error JSON; empty param and code
// are null.
func writeError(w http.ResponseWriter, status int, message, typ, param, code string) {
	d := errorDetail{Message: message, Type: typ}
	if param != "" {
		d.Param = &param
	}
	if code != "" {
		d.Code = &code
	}
	writeJSON(w, status, errorBody{Error: d})
}

func writeAPIError(w http.ResponseWriter, e *apiError) {
	writeError(w, e.status, e.message, e.typ, e.param, e.code)
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
