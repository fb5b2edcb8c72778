package vector

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/spate-dev/spate/internal/capread"
	"github.com/spate-dev/spate/internal/outfile"
)

// Truth is the exact top-k of every query of a dataset.
type Truth struct {
	// Digest is the dataset's (Dataset.Digest).
	Digest string `json:"dataset_sha256"`
	Metric Metric `json:"metric"`
	K      int    `json:"k"`
	// IDs[q] are the ids of query q's k nearest base vectors, nearest
	// first (ties broken by the smaller id).
	IDs [][]int32 `json:"ids"`
}

// BruteForce computes the exact top-k of every query by comparing it with
// every base vector, on all cores.
func BruteForce(ds *Dataset, m Metric, k int) (*Truth, error) {
	if k <= 0 || k > len(ds.Vectors) {
		return nil, fmt.Errorf("computing ground truth: k = %d must be in [1, %d] (the number of base vectors)", k, len(ds.Vectors))
	}
	t := &Truth{Digest: ds.Digest(), Metric: m, K: k, IDs: make([][]int32, len(ds.Queries))}
	type cand struct {
		d  float64
		id int32
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			all := make([]cand, len(ds.Vectors))
			for q := range next {
				for i, v := range ds.Vectors {
					all[i] = cand{m.Distance(ds.Queries[q], v), int32(i)}
				}
				slices.SortFunc(all, func(a, b cand) int {
					if c := cmp.Compare(a.d, b.d); c != 0 {
						return c
					}
					return cmp.Compare(a.id, b.id)
				})
				ids := make([]int32, k)
				for i := range ids {
					ids[i] = all[i].id
				}
				t.IDs[q] = ids
			}
		}()
	}
	for q := range ds.Queries {
		next <- q
	}
	close(next)
	wg.Wait()
	return t, nil
}

// CachedTruth returns the ground truth of ds under m and k from the cache
// directory dir, computing and storing it when it is not there. The cache
// file is named by the dataset's digest, the metric and k, so a changed
// dataset is never matched with stale truth.
func CachedTruth(ctx context.Context, dir string, ds *Dataset, m Metric, k int) (*Truth, error) {
	digest := ds.Digest()
	path := filepath.Join(dir, fmt.Sprintf("truth-%s-%s-k%d.json", digest[:16], m, k))
	// The truth of ds is at most k ids (10 digits and a comma each) a
	// query (and the brackets): a larger file is not it, and is computed
	// again rather than read whole.
	limit := 4096 + int64(len(ds.Queries))*int64(k+1)*16
	b, err := capread.ReadFile(ctx, path, limit, "")
	switch {
	case errors.Is(err, capread.ErrTooLarge):
	case err == nil:
		var t Truth
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, fmt.Errorf("reading ground truth cache %s: %w (delete it to recompute)", path, err)
		}
		if t.Digest == digest && t.Metric == m && t.K == k && len(t.IDs) == len(ds.Queries) {
			return &t, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("reading ground truth cache: %w", err)
	}
	t, err := BruteForce(ds, m, k)
	if err != nil {
		return nil, err
	}
	if b, err = json.Marshal(t); err != nil {
		return nil, fmt.Errorf("encoding ground truth: %w", err)
	}
	if err := outfile.Write(path, b); err != nil {
		return nil, fmt.Errorf("writing ground truth cache: %w", err)
	}
	return t, nil
}
