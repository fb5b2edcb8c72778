package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"time"
)

// maxRankDocuments bounds the documents of one rerank or score request.
const maxRankDocuments = 1000

// rankPair is one query–document pair a cross-encoder reads.
type rankPair struct {
	query, doc string
	tokens     int // query + document tokens
}

// rankRequest is the union of the rerank (Cohere, Jina, vLLM) and score
// (vLLM, all four field pairings) request bodies.
type rankRequest struct {
	Model           string          `json:"model"`
	Query           json.RawMessage `json:"query"`
	Documents       json.RawMessage `json:"documents"`
	TopN            *int            `json:"top_n"`
	ReturnDocuments *bool           `json:"return_documents"`
	Text1           json.RawMessage `json:"text_1"`
	Text2           json.RawMessage `json:"text_2"`
	Queries         json.RawMessage `json:"queries"`
	Items           json.RawMessage `json:"items"`
	Data1           json.RawMessage `json:"data_1"`
	Data2           json.RawMessage `json:"data_2"`
}

// texts reads a string, a list of strings, or a list of {"text": ...}
// objects; nil when raw is absent.
func texts(raw json.RawMessage, param string) ([]string, bool, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || isJSONNull(raw) {
		return nil, false, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, true, nil
	}
	var ss []string
	if json.Unmarshal(raw, &ss) == nil {
		return ss, false, nil
	}
	var objs []struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &objs) == nil {
		out := make([]string, len(objs))
		for i, o := range objs {
			if o.Text == nil {
				return nil, false, badRequest(param, "%s[%d] needs a text.", param, i)
			}
			out[i] = *o.Text
		}
		return out, false, nil
	}
	var obj struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &obj) == nil && obj.Text != nil {
		return []string{*obj.Text}, true, nil // NIM's query: {"text": ...}
	}
	return nil, false, badRequest(param, "%s must be a string or a list of strings.", param)
}

// parseRankRequest reads a rerank (score false) or score request into its
// pairs, in document order.
func parseRankRequest(body []byte, score bool) (model string, pairs []rankPair, topN int, returnDocs bool, aerr *apiError) {
	var w rankRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return "", nil, 0, false, jsonError(err)
	}
	qRaw, dRaw, qName, dName := w.Query, w.Documents, "query", "documents"
	if score {
		switch {
		case len(w.Text1) > 0:
			qRaw, dRaw, qName, dName = w.Text1, w.Text2, "text_1", "text_2"
		case len(w.Data1) > 0:
			qRaw, dRaw, qName, dName = w.Data1, w.Data2, "data_1", "data_2"
		case len(w.Queries) > 0 && len(w.Items) > 0:
			qRaw, dRaw, qName, dName = w.Queries, w.Items, "queries", "items"
		default:
			qRaw, qName = w.Queries, "queries"
		}
	}
	qs, single, aerr := texts(qRaw, qName)
	if aerr != nil {
		return "", nil, 0, false, aerr
	}
	ds, _, aerr := texts(dRaw, dName)
	if aerr != nil {
		return "", nil, 0, false, aerr
	}
	if len(qs) == 0 {
		return "", nil, 0, false, badRequest(qName, "%s is required.", qName)
	}
	if !score && !single {
		return "", nil, 0, false, badRequest(qName, "query must be one string.")
	}
	if len(ds) == 0 || len(ds) > maxRankDocuments {
		return "", nil, 0, false, badRequest(dName, "%s must hold 1 to %d items, got %d.", dName, maxRankDocuments, len(ds))
	}
	if len(qs) > 1 && len(qs) != len(ds) {
		return "", nil, 0, false, badRequest(dName, "%s and %s must be the same length when both are lists (%d and %d).", qName, dName, len(qs), len(ds))
	}
	for i, d := range ds {
		q := qs[0]
		if len(qs) > 1 {
			q = qs[i]
		}
		pairs = append(pairs, rankPair{query: q, doc: d, tokens: countTokens(q) + countTokens(d)})
	}
	topN = len(ds)
	if w.TopN != nil {
		if *w.TopN < 0 {
			return "", nil, 0, false, badRequest("top_n", "top_n must be >= 0, got %d.", *w.TopN)
		}
		if *w.TopN > 0 {
			topN = min(*w.TopN, len(ds))
		}
	}
	returnDocs = w.ReturnDocuments == nil || *w.ReturnDocuments
	return w.Model, pairs, topN, returnDocs, nil
}

// relevance is a deterministic score in [0, 1]: the cosine of the two
// texts' feature-hash embeddings, shifted and halved.
func relevance(q, d string) float64 {
	a, b := embed(q, 256), embed(d, 256)
	var dot float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
	}
	return (dot + 1) / 2
}

type rerankDoc struct {
	Text string `json:"text"`
}

type rerankResult struct {
	Index          int        `json:"index"`
	Document       *rerankDoc `json:"document,omitempty"`
	RelevanceScore float64    `json:"relevance_score"`
}

type rerankResponse struct {
	ID      string         `json:"id"`
	Model   string         `json:"model"`
	Usage   embedUsage     `json:"usage"`
	Results []rerankResult `json:"results"`
}

type scoreDatum struct {
	Index  int     `json:"index"`
	Object string  `json:"object"`
	Score  float64 `json:"score"`
}

type scoreResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Data    []scoreDatum `json:"data"`
	Usage   usageJSON    `json:"usage"`
}

// handleRank serves /v1/rerank (vLLM's shape, which Cohere and Jina
// clients read) or, with score, /v1/score. Like embeddings, it is one
// prefill-only pass: in deterministic mode the answer comes TTFT after the
// request; in engine mode every pair is prefilled by the engine (the query
// once per document) and the answer comes when that is done.
func (s *Server) handleRank(score bool) http.HandlerFunc {
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
		model, pairs, topN, returnDocs, aerr := parseRankRequest(body, score)
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
		for i, p := range pairs {
			if limit > 0 && p.tokens > limit {
				s.faultCounter[faultContextLength].Inc()
				s.fail(w, &apiError{status: http.StatusBadRequest,
					message: fmt.Sprintf("This model's maximum context length is %d tokens, however the query and document %d have %d tokens.", limit, i, p.tokens),
					typ:     "invalid_request_error", param: "documents", code: "context_length_exceeded"})
				return
			}
			tokens += p.tokens
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
			s.driver.submit(&seq{arrival: s.driver.since(arrival) + delay, prompt: min(tokens, s.kvLimit), sink: st})
		}
		s.metrics.promptTokens.Add(float64(tokens))
		defer s.watch(r.Context(), st)()
		for !st.done.Load() {
			if !s.await(st) {
				return
			}
		}
		id := fmt.Sprintf("%d", seqNo)
		if score {
			resp := scoreResponse{ID: "score-" + id, Object: "list", Created: arrival.Unix(), Model: model,
				Data: make([]scoreDatum, len(pairs)), Usage: usageJSON{PromptTokens: tokens, TotalTokens: tokens}}
			for i, p := range pairs {
				resp.Data[i] = scoreDatum{Index: i, Object: "score", Score: relevance(p.query, p.doc)}
			}
			writeJSON(w, http.StatusOK, resp)
		} else {
			results := make([]rerankResult, len(pairs))
			for i, p := range pairs {
				results[i] = rerankResult{Index: i, RelevanceScore: relevance(p.query, p.doc)}
				if returnDocs {
					results[i].Document = &rerankDoc{Text: p.doc}
				}
			}
			sort.SliceStable(results, func(a, b int) bool { return results[a].RelevanceScore > results[b].RelevanceScore })
			writeJSON(w, http.StatusOK, rerankResponse{ID: "rerank-" + id, Model: model,
				Usage: embedUsage{PromptTokens: tokens, TotalTokens: tokens}, Results: results[:topN]})
		}
		s.metrics.e2e.Observe(time.Since(arrival).Seconds())
	}
}

// rankPaths are the routes of handleRank: vLLM's, which include Cohere's
// and Jina's.
var rankPaths = map[string]bool{"/rerank": false, "/v1/rerank": false, "/v2/rerank": false, "/score": true, "/v1/score": true}

// rankRoutes registers handleRank's routes on mux.
func (s *Server) rankRoutes(mux *http.ServeMux) {
	for path, score := range rankPaths {
		mux.Handle(path, only(http.MethodPost, s.handleRank(score)))
	}
}
