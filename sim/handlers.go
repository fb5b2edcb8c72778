package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// generation is one accepted chat or completions request.
type generation struct {
	ep           endpoint
	seqNo        uint64
	id           string
	created      int64
	model        string // echoed
	adapter      string
	textSeed     uint64
	prompt       int // prompt tokens, RAG context included
	keys         []uint64
	n            int    // content tokens to send
	finish       string // finish_reason
	includeUsage bool
	arrival      time.Time
	delay        time.Duration // latency spike plus RAG stages, before any work
	truncate     int           // cut the stream after this many tokens, or -1
	stallAt      int           // stall before this token, or -1
	stall        time.Duration
	script       *script // scripted beginning of the answer (vulnerable.go), or nil
	st           *stream
	lp           *logprobPlan // the answer's logprobs (logprobs.go), or nil
}

// readBody reads a request body of at most maxRequestBody bytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &apiError{status: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("Request body larger than %d bytes.", mbe.Limit), typ: "invalid_request_error"}
		}
		return nil, badRequest("", "Reading request body: %v.", err)
	}
	return b, nil
}

// fail answers an API error and counts it.
func (s *Server) fail(w http.ResponseWriter, e *apiError) {
	s.metrics.errors.WithLabelValues(strconv.Itoa(e.status)).Inc()
	writeAPIError(w, e)
}

// resolveAdapter maps a request's model name to a LoRA adapter ("" for the
// base model) in engine mode; see LoRAConfig.
func (s *Server) resolveAdapter(model string) (string, *apiError) {
	if s.cfg.Engine == nil {
		return "", nil
	}
	if s.adapters[model] {
		return model, nil
	}
	i := strings.LastIndexByte(model, ':')
	if i < 0 {
		return "", nil
	}
	a := model[i+1:]
	if a == "" || (len(s.adapters) > 0 && !s.adapters[a]) {
		return "", &apiError{status: http.StatusNotFound, message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model), typ: "invalid_request_error", param: "model", code: "model_not_found"}
	}
	return a, nil
}

// rejectByFault answers a drawn 500 or 429 and reports whether it did.
func (s *Server) rejectByFault(w http.ResponseWriter, d faultDraws, f *Faults) bool {
	switch d.reject(f) {
	case rejectError:
		s.faultCounter[faultError].Inc()
		s.metrics.errors.WithLabelValues("500").Inc()
		writeError(w, http.StatusInternalServerError, "The server had an error while processing your request (simulated by spate sim).", "server_error", "", "")
		return true
	case rejectRateLimit:
		s.faultCounter[faultRateLimit].Inc()
		s.metrics.errors.WithLabelValues("429").Inc()
		writeRateLimited(w, f)
		return true
	}
	return false
}

// contextLimit is the largest prompt + completion a request may ask for, or
// 0 for no limit.
func (s *Server) contextLimit(f *Faults) int {
	limit := f.MaxContext
	if s.kvLimit > 0 && (limit == 0 || s.kvLimit < limit) {
		limit = s.kvLimit
	}
	return limit
}

// outputLength decides how many tokens to generate and why the response
// ends, and enforces the context window.
func (s *Server) outputLength(req *genRequest, f *Faults, prompt int) (int, string, *apiError) {
	n := s.cfg.OutputTokens
	if n == 0 {
		n = req.maxTokens
		if n == 0 {
			n = DefaultOutputTokens
		}
	}
	finish := "stop"
	if req.maxTokens > 0 && (req.ignoreEOS || n >= req.maxTokens) {
		n, finish = req.maxTokens, "length"
	}
	if limit := s.contextLimit(f); limit > 0 {
		if prompt+req.maxTokens > limit || prompt >= limit {
			param := "messages"
			if req.ep == epCompletion {
				param = "prompt"
			}
			return 0, "", &apiError{
				status: http.StatusBadRequest,
				message: fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the %s, %d in the completion). Please reduce the length of the %s or completion.",
					limit, prompt+req.maxTokens, prompt, param, req.maxTokens, param),
				typ:   "invalid_request_error",
				param: param,
				code:  "context_length_exceeded",
			}
		}
		if prompt+n > limit {
			n, finish = limit-prompt, "length"
		}
	}
	return n, finish, nil
}

// ragDelay draws the retrieve + rerank delay of request seqNo.
func (s *Server) ragDelay(seqNo uint64) time.Duration {
	r := s.cfg.Engine.RAG
	base := mix64(uint64(s.cfg.Seed) ^ 0x7261670000000000 ^ seqNo) // "rag"
	z1 := normalFrom(mix64(base), mix64(base+1))
	z2 := normalFrom(mix64(base+2), mix64(base+3))
	d := logNormal(float64(r.RetrieveMedian), r.Sigma, z1) + logNormal(float64(r.RerankMedian), r.Sigma, z2)
	return time.Duration(d)
}

// normalFrom turns two random words into a standard normal draw.
func normalFrom(a, b uint64) float64 {
	u1 := 1 - unitFloat(a) // (0, 1]
	u2 := unitFloat(b)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// handleGenerate serves /v1/chat/completions and /v1/completions.
func (s *Server) handleGenerate(ep endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		arrival := time.Now()
		if !s.enter() {
			writeError(w, http.StatusServiceUnavailable, "The simulator is shutting down.", "server_error", "", "")
			return
		}
		defer s.leave()
		body, aerr := readBody(w, r)
		if aerr != nil {
			s.fail(w, aerr)
			return
		}
		req, aerr := parseGenRequest(ep, body, s.blockSize)
		if aerr != nil {
			s.fail(w, aerr)
			return
		}
		model := req.model
		if model == "" {
			model = s.cfg.Model
		}
		adapter, aerr := s.resolveAdapter(model)
		if aerr != nil {
			s.fail(w, aerr)
			return
		}
		seqNo := s.reqSeq.Add(1)
		f := s.faults.Load()
		draws := drawFaults(s.cfg.Seed, seqNo)
		if s.rejectByFault(w, draws, f) {
			return
		}
		g := &generation{
			ep:           ep,
			seqNo:        seqNo,
			created:      arrival.Unix(),
			model:        model,
			adapter:      adapter,
			textSeed:     mix64(uint64(s.cfg.Seed)*0x9e3779b97f4a7c15 ^ seqNo),
			prompt:       req.promptTokens,
			keys:         req.keys(),
			includeUsage: req.includeUsage,
			arrival:      arrival,
			st:           newStream(),
		}
		if e := s.cfg.Engine; e != nil && e.RAG != nil {
			g.prompt += e.RAG.ContextTokens
			g.delay += s.ragDelay(seqNo)
		}
		n, finish, aerr := s.outputLength(req, f, g.prompt)
		if aerr != nil {
			s.faultCounter[faultContextLength].Inc()
			s.fail(w, aerr)
			return
		}
		if cut, ok := lengthCut(s.cfg.Seed, seqNo, f.LengthRate, n); ok {
			n, finish = cut, "length"
			s.faultCounter[faultLength].Inc()
		}
		g.n, g.finish = n, finish
		if req.topLogprobs >= 0 {
			e := DefaultEntropy
			if s.cfg.Entropy != nil {
				e = *s.cfg.Entropy
			}
			g.lp = newLogprobPlan(ep, req.topLogprobs, e.target(s.cfg.Seed, seqNo, req.turn))
		}
		if f.Vulnerability > 0 {
			var followed bool
			if g.script, followed = s.vulnerableScript(ep, body, seqNo, f.Vulnerability); g.script != nil {
				if followed {
					s.vulnFollowed.Add(1)
				} else {
					s.vulnRefused.Add(1)
				}
			}
		}
		if sp := draws.spike(f); sp > 0 {
			s.faultCounter[faultSpike].Inc()
			g.delay += sp
		}
		g.truncate, g.stallAt = -1, -1
		if req.stream {
			if g.truncate = draws.truncateAfter(f, n); g.truncate >= 0 {
				s.faultCounter[faultTruncate].Inc()
			}
		}
		if g.stallAt = draws.stallBefore(f, n); g.stallAt >= 0 {
			s.faultCounter[faultStall].Inc()
			g.stall = f.StallDuration
		}
		idPrefix := "chatcmpl-"
		if ep == epCompletion {
			idPrefix = "cmpl-"
		}
		g.id = fmt.Sprintf("%s%016x%016x", idPrefix, mix64(g.textSeed), mix64(g.textSeed+1))
		s.metrics.promptTokens.Add(float64(g.prompt))
		if s.driver == nil {
			s.metrics.running.Inc()
			defer s.metrics.running.Dec()
		}
		if req.stream {
			s.streamGeneration(w, r, g)
		} else {
			s.wholeGeneration(w, r, g)
		}
	}
}

// keys returns the prompt's prefix-cache keys.
func (r *genRequest) keys() []uint64 { return r.blockKeys }

// start hands g to the clock (pacer or engine).
// In deterministic mode a stream's events are written by the pacer (out);
// whole answers are released at once when the last token is due. It returns
// the pacer's entry and false if the pacer has stopped (the server is
// closing).
func (s *Server) start(g *generation, out *sseStream, whole bool) (*paced, bool) {
	if p := s.pacerFor(g.seqNo); p != nil {
		e := &paced{st: g.st, out: out, start: p.since(g.arrival) + g.delay, total: g.n, stallAt: g.stallAt, stall: g.stall, whole: whole}
		return e, p.submit(e)
	}
	s.driver.submit(&seq{
		arrival: s.driver.since(g.arrival) + g.delay,
		prompt:  g.prompt,
		target:  g.n,
		keys:    g.keys,
		adapter: g.adapter,
		sink:    g.st,
	})
	return nil, true
}

// watch makes st report cancelled, and wakes it, when ctx (the client) or
// the server ends, so that waiting for the next token is one channel
// receive. The returned function stops watching.
func (s *Server) watch(ctx context.Context, st *stream) (stop func()) {
	wake := func() {
		st.cancelled.Store(true)
		st.notify()
	}
	stopReq := context.AfterFunc(ctx, wake)
	stopSrv := context.AfterFunc(s.ctx, wake)
	return func() {
		stopReq()
		stopSrv()
	}
}

// await blocks until st has news; it reports false when the client or the
// server went away (see watch).
func (s *Server) await(st *stream) bool {
	<-st.wake
	return !st.cancelled.Load()
}

// sleepCtx sleeps for d unless ctx or the server ends first.
func (s *Server) sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.ctx.Done():
	}
	return false
}

// wholeGeneration answers a non-streaming request once its last token is
// generated.
func (s *Server) wholeGeneration(w http.ResponseWriter, r *http.Request, g *generation) {
	ctx := r.Context()
	defer s.watch(ctx, g.st)()
	s.start(g, nil, true)
	for !g.st.done.Load() {
		if !s.await(g.st) {
			s.metrics.success.WithLabelValues("abort").Inc()
			return
		}
	}
	if s.driver != nil && g.stallAt >= 0 {
		if !s.sleepCtx(ctx, g.stall) {
			return
		}
	}
	text := string(g.appendText(s.vocab, make([]byte, 0, 8*g.n), g.n))
	usage := usageJSON{PromptTokens: g.prompt, CompletionTokens: g.n, TotalTokens: g.prompt + g.n}
	var resp any
	var lp json.RawMessage
	if g.lp != nil {
		lp = g.lp.wholeJSON(g.ep, g.n, func(k int) []byte { return g.eventWord(s.vocab, k) })
	}
	if g.ep == epChat {
		resp = chatResponse{ID: g.id, Object: "chat.completion", Created: g.created, Model: g.model, Usage: usage,
			Choices: []chatChoice{{Message: chatMessage{Role: "assistant", Content: text}, FinishReason: g.finish, Logprobs: lp}}}
	} else {
		resp = completionResponse{ID: g.id, Object: "text_completion", Created: g.created, Model: g.model, Usage: usage,
			Choices: []completionChoice{{Text: text, FinishReason: g.finish, Logprobs: lp}}}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		s.fail(w, &apiError{status: http.StatusInternalServerError, message: "encoding response: " + err.Error(), typ: "server_error"})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Request-Id", g.id)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	now := time.Now()
	m := s.metrics
	m.genTokens.Add(float64(g.n))
	m.ttft.Observe(now.Sub(g.arrival).Seconds()) // the whole answer is the first byte
	m.e2e.Observe(now.Sub(g.arrival).Seconds())
	m.success.WithLabelValues(g.finish).Inc()
	if s.driver != nil {
		m.queue.Observe(time.Duration(g.st.queueTime.Load()).Seconds())
	}
}

// Non-streaming response JSON.
type usageJSON struct {
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      chatMessage     `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
	StopReason   *string         `json:"stop_reason"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   usageJSON    `json:"usage"`
}

type completionChoice struct {
	Index        int             `json:"index"`
	Text         string          `json:"text"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
	StopReason   *string         `json:"stop_reason"`
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   usageJSON          `json:"usage"`
}

// handleEmbeddings serves /v1/embeddings. In deterministic mode the answer
// comes TTFT after the request; in engine mode the inputs are prefilled by
// the engine (sharing its steps with generation) and the answer comes when
// that is done.
func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	arrival := time.Now()
	if !s.enter() {
		writeError(w, http.StatusServiceUnavailable, "The simulator is shutting down.", "server_error", "", "")
		return
	}
	defer s.leave()
	body, aerr := readBody(w, r)
	if aerr != nil {
		s.fail(w, aerr)
		return
	}
	model, inputs, dim, b64, aerr := parseEmbedRequest(body, s.cfg.EmbeddingDim)
	if aerr != nil {
		s.fail(w, aerr)
		return
	}
	if model == "" {
		model = s.cfg.Model
	}
	if _, aerr := s.resolveAdapter(model); aerr != nil {
		s.fail(w, aerr)
		return
	}
	seqNo := s.reqSeq.Add(1)
	f := s.faults.Load()
	draws := drawFaults(s.cfg.Seed, seqNo)
	if s.rejectByFault(w, draws, f) {
		return
	}
	tokens := 0
	limit := s.contextLimit(f)
	for i, in := range inputs {
		if limit > 0 && in.tokens > limit {
			s.faultCounter[faultContextLength].Inc()
			s.fail(w, &apiError{status: http.StatusBadRequest,
				message: fmt.Sprintf("This model's maximum context length is %d tokens, however you requested %d tokens in input[%d]. Please reduce your prompt; or completion length.", limit, in.tokens, i),
				typ:     "invalid_request_error", param: "input", code: "context_length_exceeded"})
			return
		}
		tokens += in.tokens
	}
	delay := time.Duration(0)
	if sp := draws.spike(f); sp > 0 {
		s.faultCounter[faultSpike].Inc()
		delay = sp
	}
	st := newStream()
	if p := s.pacerFor(seqNo); p != nil {
		p.submit(&paced{st: st, start: p.since(arrival) + delay, whole: true, fixed: s.cfg.TTFT, stallAt: -1})
	} else {
		// The inputs are prefilled as one sequence, capped at the cache size.
		s.driver.submit(&seq{arrival: s.driver.since(arrival) + delay, prompt: min(tokens, s.kvLimit), sink: st})
	}
	s.metrics.promptTokens.Add(float64(tokens))
	defer s.watch(r.Context(), st)()
	for !st.done.Load() {
		if !s.await(st) {
			return
		}
	}
	resp := embedResponse{Object: "list", Model: model, Usage: embedUsage{PromptTokens: tokens, TotalTokens: tokens}, Data: make([]embedDatum, len(inputs))}
	for i, in := range inputs {
		v := embed(in.text, dim)
		resp.Data[i] = embedDatum{Object: "embedding", Index: i, Embedding: v}
		if b64 {
			resp.Data[i].Embedding = embedBase64(v)
		}
	}
	writeJSON(w, http.StatusOK, resp)
	s.metrics.e2e.Observe(time.Since(arrival).Seconds())
}
