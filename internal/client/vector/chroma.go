package vector

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
)

// Chroma is a collection of a Chroma server, through its HTTP API v2 in
// the default tenant and database. Chroma sets ef_search per collection,
// not per query, and a running server keeps the ef_search the collection
// was made with (changing its configuration later was seen to have no
// effect on Chroma 1.0): PrepareEf makes the collection again with the
// ef asked for, between stages.
type Chroma struct {
	base, name string
	hc         *http.Client
	mu         sync.Mutex
	id         string   // collection id, once known
	ef         int      // ef_search the collection was made with (0: default)
	ds         *Dataset // what Load loaded, to make the collection again
	metric     Metric
}

// NewChroma returns the collection name of the Chroma server at base
// (http://host:port).
func NewChroma(base, name string) *Chroma {
	return &Chroma{base: base, name: name, hc: newHTTPClient()}
}

// Backend implements Index.
func (c *Chroma) Backend() string { return "chroma" }

func (c *Chroma) collections() string {
	return c.base + "/api/v2/tenants/default_tenant/databases/default_database/collections"
}

// chromaSpace is Chroma's name of m.
func chromaSpace(m Metric) string {
	switch m {
	case L2:
		return "l2"
	case Dot:
		return "ip"
	}
	return "cosine"
}

// chromaBatch is how many vectors one add request carries.
const chromaBatch = 500

// Load implements Index: it deletes the collection if it exists, creates
// it with an HNSW index for m and adds the vectors in batches.
func (c *Chroma) Load(ctx context.Context, ds *Dataset, m Metric) error {
	return c.load(ctx, ds, m, 0)
}

// PrepareEf makes the collection again with ef_search = ef, unless it
// already has it (ef 0: leave it as it is).
func (c *Chroma) PrepareEf(ctx context.Context, ef int) error {
	c.mu.Lock()
	same, ds, m := ef == 0 || ef == c.ef, c.ds, c.metric
	c.mu.Unlock()
	switch {
	case same:
		return nil
	case ef == Exact:
		return errors.New("chroma: no exact search: give an ef_search instead")
	case ds == nil:
		return fmt.Errorf("chroma: ef_search %d: Chroma fixes ef_search when a collection is made, so spate must load the collection itself to sweep it", ef)
	}
	return c.load(ctx, ds, m, ef)
}

func (c *Chroma) load(ctx context.Context, ds *Dataset, m Metric, ef int) error {
	err := callJSON(ctx, c.hc, http.MethodDelete, c.collections()+"/"+c.name, nil, nil)
	var se *httpStatusError
	if err != nil && !(errors.As(err, &se) && se.Status == http.StatusNotFound) {
		return fmt.Errorf("chroma: deleting collection %s: %w", c.name, err)
	}
	var created struct {
		ID string `json:"id"`
	}
	hnsw := map[string]any{"space": chromaSpace(m)}
	if ef > 0 {
		hnsw["ef_search"] = ef
	}
	body := map[string]any{"name": c.name, "configuration": map[string]any{"hnsw": hnsw}}
	if err := callJSON(ctx, c.hc, http.MethodPost, c.collections(), body, &created); err != nil {
		return fmt.Errorf("chroma: creating collection %s: %w", c.name, err)
	}
	c.mu.Lock()
	c.id, c.ef, c.ds, c.metric = created.ID, ef, ds, m
	c.mu.Unlock()
	for start := 0; start < len(ds.Vectors); start += chromaBatch {
		end := min(start+chromaBatch, len(ds.Vectors))
		ids := make([]string, 0, end-start)
		for i := start; i < end; i++ {
			ids = append(ids, strconv.Itoa(i))
		}
		add := map[string]any{"ids": ids, "embeddings": ds.Vectors[start:end]}
		if err := callJSON(ctx, c.hc, http.MethodPost, c.collections()+"/"+created.ID+"/add", add, nil); err != nil {
			return fmt.Errorf("chroma: adding vectors %d-%d: %w", start, end-1, err)
		}
	}
	return nil
}

// collection returns the collection id, asking the server the first
// time.
func (c *Chroma) collection(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id == "" {
		var got struct {
			ID string `json:"id"`
		}
		if err := callJSON(ctx, c.hc, http.MethodGet, c.collections()+"/"+c.name, nil, &got); err != nil {
			return "", fmt.Errorf("chroma: finding collection %s: %w", c.name, err)
		}
		c.id = got.ID
	}
	return c.id, nil
}

// Search implements Index.
func (c *Chroma) Search(ctx context.Context, q []float32, k, ef int) ([]int64, error) {
	c.mu.Lock()
	made := c.ef
	c.mu.Unlock()
	if ef == Exact {
		return nil, errors.New("chroma: no exact search: give an ef_search instead")
	}
	if ef != 0 && ef != made {
		return nil, fmt.Errorf("chroma: ef_search %d asked, the collection has %d: call PrepareEf first", ef, made)
	}
	id, err := c.collection(ctx)
	if err != nil {
		return nil, err
	}
	var out struct {
		IDs [][]string `json:"ids"`
	}
	body := map[string]any{"query_embeddings": [][]float32{q}, "n_results": k, "include": []string{"distances"}}
	if err := callJSON(ctx, c.hc, http.MethodPost, c.collections()+"/"+id+"/query", body, &out); err != nil {
		return nil, fmt.Errorf("chroma: query: %w", err)
	}
	if len(out.IDs) != 1 {
		return nil, fmt.Errorf("chroma: query: %d result lists for one query", len(out.IDs))
	}
	ids := make([]int64, len(out.IDs[0]))
	for i, s := range out.IDs[0] {
		if ids[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return nil, fmt.Errorf("chroma: query: id %q is not one spate loaded: %w", s, err)
		}
	}
	return ids, nil
}

// Close implements Index.
func (c *Chroma) Close() error { c.hc.CloseIdleConnections(); return nil }
