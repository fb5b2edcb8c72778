package vector

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/spate-dev/spate/internal/scrub"
)

// Index is a collection of vectors in a vector database: spate fills it
// with a dataset and searches it.
type Index interface {
	// Backend names the database: pgvector, chroma or qdrant.
	Backend() string
	// Load replaces the collection with ds's base vectors (id = index in
	// ds.Vectors) and builds its ANN index for metric m.
	Load(ctx context.Context, ds *Dataset, m Metric) error
	// Search returns the ids of the k nearest vectors to q, nearest first.
	// ef is the search-time breadth (hnsw.ef_search, hnsw_ef); 0 leaves
	// the server's setting; Exact asks for an exact search without the
	// index, where the backend has one.
	Search(ctx context.Context, q []float32, k, ef int) ([]int64, error)
	// Close releases connections.
	Close() error
}

// Exact as a search's ef asks for an exact (brute-force) search.
const Exact = -1

// Open connects to the index a URL names:
//
//	pgvector://user:pass@host:port/db?table=spate_vectors  (or postgres://)
//	chroma://host:port/collection                          (http; chromas:// for https)
//	qdrant://host:port/collection                          (http; qdrants:// for https)
func Open(ctx context.Context, raw string) (Index, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the URL, password and all.
		return nil, fmt.Errorf("vector target %q is not a URL: escape %% and @ in its password (%%25, %%40)", scrub.URL(raw))
	}
	name := strings.Trim(u.Path, "/")
	switch u.Scheme {
	case "pgvector", "postgres", "postgresql":
		table := u.Query().Get("table")
		if table == "" {
			table = "spate_vectors"
		}
		q := u.Query()
		q.Del("table")
		u.RawQuery = q.Encode()
		u.Scheme = "postgres"
		return OpenPgvector(ctx, u.String(), table, 0)
	case "chroma", "chromas":
		if name == "" {
			name = "spate-vectors"
		}
		return NewChroma(httpBase(u, "chromas"), name), nil
	case "qdrant", "qdrants":
		if name == "" {
			name = "spate_vectors"
		}
		return NewQdrant(httpBase(u, "qdrants"), name), nil
	}
	return nil, fmt.Errorf("vector target %q: unknown scheme %q: use pgvector://, chroma:// or qdrant://", scrub.URL(raw), u.Scheme)
}

// ProxyUpstream is the HTTP base of the database a vector URL names, for a
// fault-injecting proxy in front of it, and the function that points the
// URL at the proxy (an http://HOST:PORT address) instead. Only the HTTP
// databases (Chroma, Qdrant) can be proxied.
func ProxyUpstream(raw string) (upstream string, through func(proxyHost string) string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the URL, password and all.
		return "", nil, fmt.Errorf("vector target %q is not a URL: escape %% and @ in its password (%%25, %%40)", scrub.URL(raw))
	}
	var secure string
	switch u.Scheme {
	case "chroma", "chromas":
		secure = "chromas"
	case "qdrant", "qdrants":
		secure = "qdrants"
	case "pgvector", "postgres", "postgresql":
		return "", nil, fmt.Errorf("%s speaks the Postgres protocol, not HTTP: the chaos proxy cannot sit in front of it (use a TCP fault injector such as toxiproxy)", scrub.URL(raw))
	default:
		return "", nil, fmt.Errorf("vector target %q: unknown scheme %q: use chroma:// or qdrant://", scrub.URL(raw), u.Scheme)
	}
	up := httpBase(u, secure)
	return up, func(proxyHost string) string {
		p := *u
		p.Scheme, p.Host = strings.TrimSuffix(secure, "s"), proxyHost // the proxy speaks plain HTTP
		return p.String()
	}, nil
}

func httpBase(u *url.URL, secure string) string {
	scheme := "http"
	if u.Scheme == secure {
		scheme = "https"
	}
	return scheme + "://" + u.Host
}
