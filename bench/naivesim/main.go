// Command naivesim is the stand-in peer of bench/sim-compare.sh: the
// simulator a Go developer writes first. net/http serves OpenAI-compatible
// streaming chat completions; each request's handler goroutine sleeps TTFT,
// then for every token encodes one chat.completion.chunk with encoding/json,
// writes it as one server-sent event and flushes, and sleeps ITL before the
// next (relative sleeps, so lateness accumulates as drift). It answers
// streaming chat completions only, on loopback.
//
// Usage:
//
//	naivesim -addr 127.0.0.1:18081 -ttft 50ms -itl 10ms -tokens 128
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// chunk is one chat.completion.chunk, as OpenAI and vLLM send it.
type chunk struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage,omitempty"`
}

type choice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// request is the part of the request body naivesim reads.
type request struct {
	Model         string `json:"model"`
	MaxTokens     int    `json:"max_tokens"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

var words = strings.Fields("the of and to in is that it was for on are as with his they at be this from have or by one had not but what all were when we there can an your which their said if do will each about how up out them then she many some so these would other into has more her two like him see time could no make than first been its who now people my made over did down only way find use may water long little very after words called just where most know")

func main() {
	addr := flag.String("addr", "127.0.0.1:18081", "listen address (loopback)")
	ttft := flag.Duration("ttft", 50*time.Millisecond, "time to first token")
	itl := flag.Duration("itl", 10*time.Millisecond, "sleep between tokens")
	tokens := flag.Int("tokens", 128, "tokens per response when the request has no max_tokens")
	flag.Parse()
	if host, _, err := net.SplitHostPort(*addr); err != nil || !net.ParseIP(host).IsLoopback() {
		fmt.Fprintln(os.Stderr, "naivesim: -addr must be a loopback address")
		os.Exit(2)
	}
	var seq atomic.Uint64
	h := func(w http.ResponseWriter, r *http.Request) {
		var req request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := req.MaxTokens
		if n <= 0 {
			n = *tokens
		}
		fl := w.(http.Flusher)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		c := chunk{ID: fmt.Sprintf("chatcmpl-%d", seq.Add(1)), Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: req.Model}
		send := func(c *chunk) bool {
			b, err := json.Marshal(c)
			if err != nil {
				return false
			}
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return false
			}
			fl.Flush()
			return r.Context().Err() == nil
		}
		c.Choices = []choice{{Delta: delta{Role: "assistant"}}}
		if !send(&c) {
			return
		}
		time.Sleep(*ttft)
		stop := "length"
		for i := range n {
			c.Choices[0].Delta = delta{Content: " " + words[i%len(words)]}
			if i == n-1 {
				c.Choices[0].FinishReason = &stop
			}
			if !send(&c) {
				return
			}
			if i < n-1 {
				time.Sleep(*itl)
			}
		}
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			u := chunk{ID: c.ID, Object: c.Object, Created: c.Created, Model: c.Model, Choices: []choice{}, Usage: &usage{PromptTokens: 10, CompletionTokens: n, TotalTokens: 10 + n}}
			if !send(&u) {
				return
			}
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		fl.Flush()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", h)
	mux.HandleFunc("GET /health", func(http.ResponseWriter, *http.Request) {})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: *addr, Handler: mux}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
