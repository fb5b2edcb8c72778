package workload

import (
	"context"
	"fmt"

	"github.com/spate-dev/spate/experiment"
)

// maxDocuments bounds the documents of one rerank or score request (Cohere
// recommends at most 1,000).
const maxDocuments = 1000

// withDocuments gives every request of src the documents a rerank or score
// request ranks against its prompt: synthetic words, Count per request of
// Tokens each, the same for the same request index and seed.
func withDocuments(ctx context.Context, src Source, spec experiment.Documents, seed uint64, v *Vocab) (Source, error) {
	count, err := lengthsOr(ctx, spec.Count, "10")
	if err != nil {
		return nil, fmt.Errorf("documents.count %w", err)
	}
	if count.Mean > maxDocuments {
		return nil, fmt.Errorf("documents.count %s: at most %d documents a request", spec.Count, maxDocuments)
	}
	tokens, err := lengthsOr(ctx, spec.Tokens, "64")
	if err != nil {
		return nil, fmt.Errorf("documents.tokens %w", err)
	}
	if spec.TopN < 0 {
		return nil, fmt.Errorf("documents.topN %d: want >= 0", spec.TopN)
	}
	key := fmt.Sprintf("documents/v1 count=%s tokens=%s topN=%d seed=%d", count.key(), tokens.key(), spec.TopN, seed) + v.key()
	return SourceFunc{
		Sha256: digest([]byte(src.Digest()), []byte(key)),
		F: func(n uint64) (*Request, error) {
			r, err := src.Request(n)
			if err != nil {
				return nil, err
			}
			c := *r
			rnd := newRand(seed^0xD0C5, n)
			k := min(count.Sample(rnd), maxDocuments)
			c.Documents, c.DocumentTokens = make([]string, k), 0
			for i := range c.Documents {
				t := tokens.Sample(rnd)
				c.Documents[i], t = v.Text(rnd, t)
				c.DocumentTokens += t
			}
			c.TopN = spec.TopN
			return &c, nil
		},
	}, nil
}
