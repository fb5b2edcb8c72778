// Package qdranttest is a stand-in for a Qdrant server, for tests: it
// speaks Qdrant's documented HTTP endpoints for collections, point upserts
// and points/search, answers by brute force, and can plant wrong answers
// and delays so that recall and latency are known.
//
// Test support for the client stage.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package qdranttest

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spate-dev/spate/internal/client/vector"
)

// Server is a stand-in for a Qdrant server in spate's tests (no Qdrant
// server runs here): it speaks the documented collection, points-upsert and
// points/search endpoints, answers by brute force, and, to plant a known
// recall, replaces the last `wrong` ids of a non-exact answer with ids
// that are not among the nearest, and delays every search by delay.
type Server struct {
	// Wrong is how many of a non-exact answer's last ids are replaced by
	// the farthest points; Delay is added to every search.
	Wrong int
	Delay time.Duration

	mu     sync.Mutex
	dim    int
	dist   string
	points map[int][]float32
	efs    []float64
	exact  int
}

// Points returns how many points the collection holds and its distance.
func (f *Server) Points() (int, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.points), f.dist
}

// Searches returns the hnsw_ef of every search so far (0: none given) and
// how many were exact.
func (f *Server) Searches() ([]float64, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]float64(nil), f.efs...), f.exact
}

// ServeHTTP implements http.Handler.
func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 2 && parts[0] == "collections" && r.Method == http.MethodDelete:
		if f.points == nil {
			http.Error(w, `{"status":{"error":"Not found"}}`, http.StatusNotFound)
			return
		}
		f.points = nil
	case len(parts) == 2 && parts[0] == "collections" && r.Method == http.MethodPut:
		var body struct {
			Vectors struct {
				Size     int    `json:"size"`
				Distance string `json:"distance"`
			} `json:"vectors"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Vectors.Size <= 0 {
			http.Error(w, `{"status":{"error":"bad collection"}}`, http.StatusBadRequest)
			return
		}
		f.dim, f.dist, f.points = body.Vectors.Size, body.Vectors.Distance, map[int][]float32{}
	case len(parts) == 3 && parts[2] == "points" && r.Method == http.MethodPut:
		var body struct {
			Points []struct {
				ID     int       `json:"id"`
				Vector []float32 `json:"vector"`
			} `json:"points"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, `{"status":{"error":"bad points"}}`, http.StatusBadRequest)
			return
		}
		for _, p := range body.Points {
			if len(p.Vector) != f.dim {
				http.Error(w, `{"status":{"error":"wrong dimension"}}`, http.StatusBadRequest)
				return
			}
			f.points[p.ID] = p.Vector
		}
	case len(parts) == 4 && parts[2] == "points" && parts[3] == "search" && r.Method == http.MethodPost:
		var body struct {
			Vector []float32 `json:"vector"`
			Limit  int       `json:"limit"`
			Params struct {
				HnswEf float64 `json:"hnsw_ef"`
				Exact  bool    `json:"exact"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Vector) != f.dim {
			http.Error(w, `{"status":{"error":"bad search"}}`, http.StatusBadRequest)
			return
		}
		f.efs = append(f.efs, body.Params.HnswEf)
		m := map[string]vector.Metric{"Cosine": vector.Cosine, "Euclid": vector.L2, "Dot": vector.Dot}[f.dist]
		type hit struct {
			ID    int     `json:"id"`
			Score float64 `json:"score"`
		}
		var hits []hit
		for id, v := range f.points {
			hits = append(hits, hit{id, m.Distance(body.Vector, v)})
		}
		sort.Slice(hits, func(a, b int) bool {
			if hits[a].Score != hits[b].Score {
				return hits[a].Score < hits[b].Score
			}
			return hits[a].ID < hits[b].ID
		})
		out := hits[:body.Limit]
		if body.Params.Exact {
			f.exact++
		} else {
			for i := 0; i < f.Wrong; i++ {
				out[body.Limit-1-i] = hits[len(hits)-1-i] // the farthest: never in the top-k
			}
		}
		if f.Delay > 0 {
			f.mu.Unlock()
			time.Sleep(f.Delay)
			f.mu.Lock()
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"result": out, "status": "ok", "time": 0.001})
		return
	default:
		http.Error(w, `{"status":{"error":"no such endpoint"}}`, http.StatusNotFound)
		return
	}
	_, _ = w.Write([]byte(`{"result":true,"status":"ok","time":0.001}`))
}
