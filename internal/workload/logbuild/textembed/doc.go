// Package textembed turns texts into vectors for clustering: a built-in,
// offline, deterministic hashed TF-IDF embedding (Local), and a client of an
// OpenAI-compatible /v1/embeddings endpoint (Remote). Both return
// L2-normalised vectors, so that a dot product is a cosine similarity.
//
// Stage: workload (built from a log).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package textembed

import "context"

// Embedder embeds texts.
type Embedder interface {
	// Embed returns one L2-normalised vector per text, in order. A text
	// with nothing to embed (e.g. only stop words, for Local) gets an
	// empty vector.
	Embed(ctx context.Context, texts []string) ([]Vector, error)
	// Name describes the embedding for summaries, e.g.
	// "local hashed TF-IDF (1024 dims, bigrams)".
	Name() string
}
