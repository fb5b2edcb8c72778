package vector

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/engine"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
)

// Probe searches an index with a dataset's queries and records every
// query's latency and recall@k against the ground truth. It is an
// engine.Client: the engine drives it open or closed loop like any target.
type Probe struct {
	Index Index
	Data  *Dataset
	Truth *Truth
	// K is the number of neighbours asked for (recall@K); at most Truth.K.
	K int
}

var _ engine.Client = (*Probe)(nil)

// NewProbe checks that truth belongs to ds and covers k.
func NewProbe(idx Index, ds *Dataset, truth *Truth, k int) (*Probe, error) {
	if truth.Digest != ds.Digest() || len(truth.IDs) != len(ds.Queries) {
		return nil, errors.New("vector probe: the ground truth is of another dataset: recompute it")
	}
	if k <= 0 || k > truth.K {
		return nil, fmt.Errorf("vector probe: k = %d must be in [1, %d] (the ground truth's k)", k, truth.K)
	}
	return &Probe{Index: idx, Data: ds, Truth: truth, K: k}, nil
}

// EfPreparer is implemented by indexes that cannot take the search
// breadth per query and must be set up for it before a stage (Chroma).
type EfPreparer interface {
	PrepareEf(ctx context.Context, ef int) error
}

// Prepare readies the index for searches with breadth ef, before a stage.
func (p *Probe) Prepare(ctx context.Context, ef int) error {
	if e, ok := p.Index.(EfPreparer); ok {
		return e.PrepareEf(ctx, ef)
	}
	return nil
}

// query is what a search request carries in workload.Request.Vars.
const (
	varQuery = "vector_query"
	varEf    = "ef_search"
	varK     = "top_k"
)

// Do implements engine.Client: req must come from the probe's Source.
func (p *Probe) Do(ctx context.Context, req *workload.Request, rec *record.Record) {
	qi, ok1 := req.Vars[varQuery].(int)
	ef, ok2 := req.Vars[varEf].(int)
	if !ok1 || !ok2 || qi < 0 || qi >= len(p.Data.Queries) {
		rec.Fail(record.RequestFailed, "vector probe: the request is not a query of the dataset (use the probe's Source)", time.Now())
		return
	}
	k, ok := req.Vars[varK].(int)
	if !ok || k <= 0 || k > p.Truth.K {
		k = p.K
	}
	var st stamps
	ids, err := p.Index.Search(withStamps(ctx, &st), p.Data.Queries[qi], k, ef)
	now := time.Now()
	if err != nil {
		rec.Fail(classify(ctx, err), err.Error(), now)
		return
	}
	rec.End, rec.FirstToken = now, now
	if !st.last.At.IsZero() {
		// The answer ended at its last read (the kernel's receive time
		// where the socket gives it), not when it was decoded; read late
		// without one, the end carries by how much at most, as a whole
		// answer does on the LLM clients.
		rec.End, rec.FirstToken, rec.ReadLag = st.last.At, st.last.At, max(st.lag, 1)
		if !st.last.Kernel && st.last.Bound > rawhttp.LateRead {
			rec.EndBound, rec.LateFirst, rec.FirstBound = st.last.Bound, true, st.last.Bound
		}
	}
	rec.Status = 200
	rec.Recall = RecallAt(ids, p.Truth.IDs[qi], k)
	rec.NNHit = Hit(ids, p.Truth.IDs[qi], k)
}

// Hit reports whether the first k returned ids hold the exact nearest
// neighbour (truth[0]). A neighbour at the same distance as the nearest is
// not counted: the truth breaks ties by the smaller id.
func Hit(returned []int64, truth []int32, k int) bool {
	if len(truth) == 0 {
		return false
	}
	if len(returned) > k {
		returned = returned[:k]
	}
	for _, id := range returned {
		if id == int64(truth[0]) {
			return true
		}
	}
	return false
}

// classify maps a search error to an error kind.
func classify(ctx context.Context, err error) record.ErrorKind {
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return record.Timeout
		}
		return record.Cancelled
	}
	var se *httpStatusError
	if errors.As(err, &se) {
		return record.HTTPStatus(se.Status)
	}
	if record.OutOfFiles(err) {
		return record.LocalFileLimit // this machine's limit, not the target's
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return record.Connect
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return record.Timeout
	}
	return record.RequestFailed
}

// Source returns the workload of searches with search breadth ef (0: the
// server's default): request n searches query (n + offset) mod the number
// of queries, offset drawn from seed, so every query is asked equally
// often and the same seed asks them in the same order.
func (p *Probe) Source(ef int, seed uint64) workload.Source {
	return p.SourceK(ef, p.K, seed)
}

// SourceK is Source asking for the k nearest neighbours (a stage's top_k,
// at most the ground truth's k).
func (p *Probe) SourceK(ef, k int, seed uint64) workload.Source {
	reqs := make([]*workload.Request, len(p.Data.Queries))
	for i := range reqs {
		reqs[i] = &workload.Request{Vars: map[string]any{varQuery: i, varEf: ef, varK: k}, Intent: ""}
	}
	off := seed % uint64(len(reqs))
	digest := sha256Hex(fmt.Sprintf("vector|%s|k=%d|ef=%d|seed=%d", p.Data.Digest(), k, ef, seed))
	return workload.SourceFunc{
		F:      func(n uint64) (*workload.Request, error) { return reqs[(n+off)%uint64(len(reqs))], nil },
		Sha256: digest,
	}
}
