package openai

import (
	"encoding/json"

	"github.com/valyala/fastjson"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/internal/workload"
)

// ranked reports whether the API ranks documents (rerank, score): not
// streamed, no generated tokens.
func ranked(api string) bool { return api == Rerank || api == Score }

// rerankBody is Cohere's and Jina's /rerank request, which vLLM serves too.
type rerankBody struct {
	Model     string   `json:"model"`
	Query     string   `json:"query"`
	Documents []string `json:"documents"`
	TopN      int      `json:"top_n,omitempty"`
}

// scoreBody is vLLM's /score request in its oldest form (text_1, text_2),
// which every version accepts.
type scoreBody struct {
	Model string   `json:"model"`
	Text1 string   `json:"text_1"`
	Text2 []string `json:"text_2"`
}

// rankBody encodes a rerank or score request: the prompt is the query.
func (c *Client) rankBody(req *workload.Request) ([]byte, error) {
	docs := req.Documents
	if docs == nil {
		docs = []string{}
	}
	if c.cfg.API == Score {
		return json.Marshal(scoreBody{Model: c.cfg.Model, Text1: req.Prompt, Text2: docs})
	}
	return json.Marshal(rerankBody{Model: c.cfg.Model, Query: req.Prompt, Documents: docs, TopN: req.TopN})
}

// rankedBody reads rerank or score response body b, which ended at
// rec.End, into rec, and checks it ranks the documents sent: rerank
// results name distinct documents, at most top_n of them, scores in
// descending order; score data has one score per document. The whole
// answer arrives at once: its first token is its end.
func (c *Client) rankedBody(st *stream, b []byte, rec *record.Record, req *workload.Request) error {
	v, err := st.parser.ParseBytes(b)
	if err != nil {
		return failure(record.BadResponse, "bad response body %s: %s", scrub.Text(string(b), 80), err)
	}
	if err := c.model(rec, v.GetStringBytes("model")); err != nil {
		return err
	}
	if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		// vLLM fills prompt_tokens and total_tokens, older vLLM and Jina
		// total_tokens only: all of it is input.
		if t := u.Get("prompt_tokens"); t != nil && t.GetInt() > 0 {
			rec.InputTokens = t.GetInt()
		} else if t := u.Get("total_tokens"); t != nil {
			rec.InputTokens = t.GetInt()
		}
	}
	n := len(req.Documents)
	if c.cfg.API == Score {
		data := v.GetArray("data")
		if len(data) != n {
			return failure(record.BadResponse, "score response has %d scores for %d documents", len(data), n)
		}
		seen := make([]bool, n)
		for i, d := range data {
			idx := i
			if x := d.Get("index"); x != nil {
				idx = x.GetInt()
			}
			if idx < 0 || idx >= n || seen[idx] || d.Get("score") == nil {
				return failure(record.BadResponse, "score response: data[%d] has index %d or no score", i, idx)
			}
			seen[idx] = true
		}
	} else {
		results := v.GetArray("results")
		if results == nil {
			// NVIDIA NIM's /ranking answers with rankings.
			results = v.GetArray("rankings")
		}
		want := n
		if req.TopN > 0 {
			want = min(n, req.TopN)
		}
		if len(results) == 0 && n > 0 || len(results) > want {
			return failure(record.BadResponse, "rerank response has %d results for %d documents (top_n %d)", len(results), n, req.TopN)
		}
		seen := make([]bool, n)
		prev := 0.0
		for i, r := range results {
			idx := r.GetInt("index")
			if r.Get("index") == nil || idx < 0 || idx >= n || seen[idx] {
				return failure(record.BadResponse, "rerank response: results[%d] names document %d of %d, or one named before", i, idx, n)
			}
			seen[idx] = true
			s := r.Get("relevance_score")
			if s == nil {
				s = r.Get("logit")
			}
			if s == nil {
				return failure(record.BadResponse, "rerank response: results[%d] has no relevance_score", i)
			}
			if score := s.GetFloat64(); i > 0 && score > prev {
				return failure(record.BadResponse, "rerank response: results not sorted by relevance")
			} else {
				prev = score
			}
		}
	}
	rec.FirstToken = rec.End
	rec.Documents = n
	if rec.InputTokens == 0 && req.InputTokens > 0 {
		// No usage: the query once per document plus the documents, as a
		// cross-encoder reads them.
		rec.InputTokens = n*req.InputTokens + req.DocumentTokens
	}
	return nil
}
