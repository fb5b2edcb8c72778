// Package llmtest provides OpenAI-compatible test servers with exact,
// known timings, for tests of anything that measures them (as net/http's
// httptest does for HTTP). Token times are scheduled at absolute offsets
// from each request's arrival, so they do not drift.
//
// Not a stage: a target with exact timings, for tests of every stage.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"
)

// Words are the tokens the server streams: each is one cl100k token.
var Words = []string{" the", " of", " and", " to", " in", " is", " that", " for"}

// Config describes how every response behaves.
type Config struct {
	TTFT time.Duration // request arrival to first content chunk
	ITL  time.Duration // between content chunks
	// Tokens is the number of tokens, one a content chunk unless
	// ChunkTokens says otherwise; 0 means the request's max_tokens, or 16
	// when it has none.
	Tokens int
	// ChunkTokens, when set, is how many tokens each content chunk
	// carries, in turn and repeated: {1, 1, 1, 3} sends three chunks of one
	// token and one of three, and again, until Tokens are sent (the last
	// chunk carries what is left). Usage reports Tokens.
	ChunkTokens []int
	// Word, when set, is the text of every token instead of Words (e.g. a
	// piece of another tokenizer's vocabulary, which cl100k counts as
	// several tokens).
	Word string
	// NoUsage leaves out the usage chunk even when asked for.
	NoUsage bool
	// Claim, when over 0, is the completion_tokens usage reports instead
	// of Tokens: more than was streamed is a server that lies (or one
	// whose vocabulary cuts the text finer than cl100k).
	Claim int
	// Status, when not 0 or 200, is returned at once with an error body.
	Status int
	// Model is reported in every chunk (default "llmtest").
	Model string
	// Tokenize, when set (TokenizeLlamaCpp, TokenizeVLLM), serves
	// /tokenize with PieceTokens in that shape, and counts every prompt
	// received with it (PromptTokens).
	Tokenize string
}

// Server is a running test server.
type Server struct {
	*httptest.Server
	cfg      Config
	requests atomic.Int64
	tok      tokenizing
}

// NewServer starts a server on a loopback port. Close it when done.
func NewServer(cfg Config) *Server {
	if cfg.Model == "" {
		cfg.Model = "llmtest"
	}
	s := &Server{cfg: cfg}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.complete)
	mux.HandleFunc("/v1/completions", s.complete)
	if cfg.Tokenize != "" {
		mux.HandleFunc("/tokenize", s.tokenize)
	}
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model"}]}`, cfg.Model)
	})
	s.Server = httptest.NewServer(mux)
	return s
}

// URL returns the API base URL (ending in /v1).
func (s *Server) BaseURL() string { return s.Server.URL + "/v1" }

// Requests is the number of completion requests received.
func (s *Server) Requests() int64 { return s.requests.Load() }

type body struct {
	MaxTokens     int  `json:"max_tokens"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	s.requests.Add(1)
	var b body
	raw, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(raw, &b)
	}
	if err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	if s.cfg.Tokenize != "" {
		s.countPrompt(raw)
	}
	if s.cfg.Status != 0 && s.cfg.Status != http.StatusOK {
		http.Error(w, fmt.Sprintf(`{"error":{"message":"llmtest status %d"}}`, s.cfg.Status), s.cfg.Status)
		return
	}
	n := s.cfg.Tokens
	if n == 0 {
		n = b.MaxTokens
	}
	if n == 0 {
		n = 16
	}
	claim := n
	if s.cfg.Claim > 0 {
		claim = s.cfg.Claim
	}
	chat := strings.HasSuffix(r.URL.Path, "/chat/completions")
	wait := func(at time.Duration) bool {
		t := time.NewTimer(time.Until(start.Add(at)))
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-r.Context().Done():
			return false
		}
	}
	if !b.Stream {
		if !wait(s.cfg.TTFT + time.Duration(n-1)*s.cfg.ITL) {
			return
		}
		text := strings.Repeat(Words[0], n)
		w.Header().Set("Content-Type", "application/json")
		if chat {
			fmt.Fprintf(w, `{"object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%q}}],"usage":{"prompt_tokens":1,"completion_tokens":%d,"total_tokens":%d}}`, s.cfg.Model, text, claim, claim+1)
		} else {
			fmt.Fprintf(w, `{"object":"text_completion","model":%q,"choices":[{"index":0,"text":%q}],"usage":{"prompt_tokens":1,"completion_tokens":%d,"total_tokens":%d}}`, s.cfg.Model, text, claim, claim+1)
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	if chat {
		fmt.Fprintf(w, "data: {\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n", s.cfg.Model)
	}
	fl.Flush()
	for i, sent := 0, 0; sent < n; i++ {
		if !wait(s.cfg.TTFT + time.Duration(i)*s.cfg.ITL) {
			return
		}
		k := 1
		if len(s.cfg.ChunkTokens) > 0 {
			k = min(max(s.cfg.ChunkTokens[i%len(s.cfg.ChunkTokens)], 1), n-sent)
		}
		var word string
		for j := range k {
			if s.cfg.Word != "" {
				word += s.cfg.Word
			} else {
				word += Words[(sent+j)%len(Words)]
			}
		}
		sent += k
		if chat {
			fmt.Fprintf(w, "data: {\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", s.cfg.Model, word)
		} else {
			fmt.Fprintf(w, "data: {\"object\":\"text_completion\",\"model\":%q,\"choices\":[{\"index\":0,\"text\":%q}]}\n\n", s.cfg.Model, word)
		}
		fl.Flush()
	}
	if b.StreamOptions != nil && b.StreamOptions.IncludeUsage && !s.cfg.NoUsage {
		fmt.Fprintf(w, "data: {\"model\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", s.cfg.Model, claim, claim+1)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}
