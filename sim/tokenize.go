package sim

import (
	"encoding/json"
	"net/http"
)

// tokenizeRequest is a /tokenize request in llama.cpp's shape
// ({"content": …}) or vLLM's ({"model": …, "prompt": …}).
type tokenizeRequest struct {
	Content *string `json:"content"`
	Prompt  *string `json:"prompt"`
}

// handleTokenize answers POST /tokenize with the ids the simulator's own
// prompt count gives the text (tokenIDs): in llama.cpp's shape
// ({"tokens": […]}) to a request in llama.cpp's shape, in vLLM's
// ({"count", "max_model_len", "tokens"}) to one in vLLM's. So spate
// --tokenizer server builds prompts in the simulator's tokens, as it does
// in a real engine's.
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	b, e := readBody(w, r)
	if e != nil {
		s.fail(w, e)
		return
	}
	var req tokenizeRequest
	if err := json.Unmarshal(b, &req); err != nil {
		s.fail(w, badRequest("", "Invalid JSON: %v.", err))
		return
	}
	switch {
	case req.Content != nil:
		writeJSON(w, http.StatusOK, map[string]any{"tokens": tokenIDs(*req.Content)})
	case req.Prompt != nil:
		ids := tokenIDs(*req.Prompt)
		writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": s.maxModelLen(), "tokens": ids})
	default:
		s.fail(w, badRequest("content", `Give the text as "content" (llama.cpp) or "prompt" (vLLM).`))
	}
}
