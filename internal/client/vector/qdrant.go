package vector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// Qdrant is a collection of a Qdrant server, through its HTTP API:
// PUT /collections/{name} to create, PUT /collections/{name}/points to
// upsert, POST /collections/{name}/points/search with params.hnsw_ef per
// query to search.
type Qdrant struct {
	base, name string
	hc         *http.Client
}

// NewQdrant returns the collection name of the Qdrant server at base.
func NewQdrant(base, name string) *Qdrant {
	return &Qdrant{base: base, name: name, hc: newHTTPClient()}
}

// Backend implements Index.
func (q *Qdrant) Backend() string { return "qdrant" }

func qdrantDistance(m Metric) string {
	switch m {
	case L2:
		return "Euclid"
	case Dot:
		return "Dot"
	}
	return "Cosine"
}

// qdrantBatch is how many points one upsert carries.
const qdrantBatch = 500

type qdrantPoint struct {
	ID     int       `json:"id"`
	Vector []float32 `json:"vector"`
}

// Load implements Index.
func (q *Qdrant) Load(ctx context.Context, ds *Dataset, m Metric) error {
	coll := q.base + "/collections/" + q.name
	err := callJSON(ctx, q.hc, http.MethodDelete, coll, nil, nil)
	var se *httpStatusError
	if err != nil && !(errors.As(err, &se) && se.Status == http.StatusNotFound) {
		return fmt.Errorf("qdrant: deleting collection %s: %w", q.name, err)
	}
	create := map[string]any{"vectors": map[string]any{"size": ds.Dim, "distance": qdrantDistance(m)}}
	if err := callJSON(ctx, q.hc, http.MethodPut, coll, create, nil); err != nil {
		return fmt.Errorf("qdrant: creating collection %s: %w", q.name, err)
	}
	for start := 0; start < len(ds.Vectors); start += qdrantBatch {
		end := min(start+qdrantBatch, len(ds.Vectors))
		pts := make([]qdrantPoint, 0, end-start)
		for i := start; i < end; i++ {
			pts = append(pts, qdrantPoint{i, ds.Vectors[i]})
		}
		if err := callJSON(ctx, q.hc, http.MethodPut, coll+"/points?wait=true", map[string]any{"points": pts}, nil); err != nil {
			return fmt.Errorf("qdrant: upserting points %d-%d: %w", start, end-1, err)
		}
	}
	return nil
}

// Search implements Index.
func (q *Qdrant) Search(ctx context.Context, vec []float32, k, ef int) ([]int64, error) {
	body := map[string]any{"vector": vec, "limit": k}
	switch {
	case ef == Exact:
		body["params"] = map[string]any{"exact": true}
	case ef > 0:
		body["params"] = map[string]any{"hnsw_ef": ef}
	}
	var out struct {
		Result []struct {
			ID any `json:"id"`
		} `json:"result"`
	}
	if err := callJSON(ctx, q.hc, http.MethodPost, q.base+"/collections/"+q.name+"/points/search", body, &out); err != nil {
		return nil, fmt.Errorf("qdrant: search: %w", err)
	}
	ids := make([]int64, len(out.Result))
	for i, r := range out.Result {
		f, ok := r.ID.(float64)
		if !ok {
			return nil, fmt.Errorf("qdrant: search: point id %v is not one spate loaded (an integer)", r.ID)
		}
		ids[i] = int64(f)
	}
	return ids, nil
}

// Close implements Index.
func (q *Qdrant) Close() error { q.hc.CloseIdleConnections(); return nil }
