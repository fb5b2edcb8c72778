package llmtest

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// Tokenize shapes a Server's /tokenize endpoint answers in
// (Config.Tokenize).
const (
	// TokenizeLlamaCpp is llama.cpp's: {"content": text} → {"tokens":[ids]}.
	TokenizeLlamaCpp = "llama.cpp"
	// TokenizeVLLM is vLLM's: {"model":..,"prompt": text} →
	// {"count":N,"max_model_len":M,"tokens":[ids]}; no prompt is a 400.
	TokenizeVLLM = "vllm"
)

// PieceTokens tokenizes text the way a SentencePiece vocabulary unlike
// cl100k might: a space is put before the text (the dummy prefix), the
// text is cut before every space, and each piece ("▁word") is 1, 2 or 3
// tokens by a hash of the word (at most one a byte; a lone "▁" is one).
// So " time year" is three or more tokens where cl100k counts two, and a
// word's count does not depend on its neighbours. The ids are hashes of
// the parts.
func PieceTokens(text string) []int {
	if text == "" {
		return nil
	}
	text = " " + text
	var ids []int
	for len(text) > 0 {
		end := strings.IndexByte(text[1:], ' ') + 1
		if end == 0 {
			end = len(text)
		}
		word := text[1:end]
		text = text[end:]
		k := 1
		if word != "" {
			h := fnv.New32a()
			h.Write([]byte(word))
			k = min(int(h.Sum32()%3)+1, len(word))
		}
		part := (len(word) + k - 1) / max(k, 1)
		for i := 0; i < k; i++ {
			p := word[min(i*part, len(word)):min((i+1)*part, len(word))]
			h := fnv.New32a()
			h.Write([]byte{byte(i)})
			h.Write([]byte(p))
			ids = append(ids, int(h.Sum32()%32000))
		}
	}
	return ids
}

// tokenizing is a Server's tokenize endpoint and its counts.
type tokenizing struct {
	calls   atomic.Int64
	mu      sync.Mutex
	prompts []int
}

// TokenizeCalls is the number of /tokenize requests received.
func (s *Server) TokenizeCalls() int64 { return s.tok.calls.Load() }

// PromptTokens are the prompts received so far (a completion's prompt, a
// chat's user content), each counted with PieceTokens.
func (s *Server) PromptTokens() []int {
	s.tok.mu.Lock()
	defer s.tok.mu.Unlock()
	return append([]int(nil), s.tok.prompts...)
}

// countPrompt records a request body's prompt in PieceTokens.
func (s *Server) countPrompt(raw []byte) {
	var b struct {
		Prompt   string `json:"prompt"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(raw, &b) != nil {
		return
	}
	text := b.Prompt
	for _, m := range b.Messages {
		if m.Role == "user" {
			text = m.Content
		}
	}
	s.tok.mu.Lock()
	s.tok.prompts = append(s.tok.prompts, len(PieceTokens(text)))
	s.tok.mu.Unlock()
}

// tokenize is the /tokenize endpoint in s.cfg.Tokenize's shape.
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	s.tok.calls.Add(1)
	var b struct {
		Content *string `json:"content"`
		Prompt  *string `json:"prompt"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&b) != nil {
		http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch s.cfg.Tokenize {
	case TokenizeVLLM:
		if b.Prompt == nil {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"object":"error","message":"Field required: prompt","type":"BadRequestError","code":400}`))
			return
		}
		ids := PieceTokens(*b.Prompt)
		_ = json.NewEncoder(w).Encode(map[string]any{"count": len(ids), "max_model_len": 4096, "tokens": nonNil(ids)})
	default:
		var ids []int
		if b.Content != nil {
			ids = PieceTokens(*b.Content)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"tokens": nonNil(ids)})
	}
}

func nonNil(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}
