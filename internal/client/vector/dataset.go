package vector

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/spate-dev/spate/internal/capread"
	"github.com/spate-dev/spate/internal/workload"
)

// Dataset is a set of base vectors, identified by their index (0 ... N−1),
// and the query vectors searched among them.
type Dataset struct {
	Dim     int
	Vectors [][]float32
	Queries [][]float32
}

// GenConfig describes a generated dataset: N base vectors and Queries
// queries, in Clusters Gaussian clusters of standard deviation Spread
// around centres drawn uniformly in [−1, 1]^Dim, from Seed.
type GenConfig struct {
	N, Queries, Dim, Clusters int
	Spread                    float64
	Seed                      uint64
}

// Generate makes the dataset cfg describes; the same cfg gives the same
// vectors.
func Generate(cfg GenConfig) (*Dataset, error) {
	if cfg.N <= 0 || cfg.Queries <= 0 || cfg.Dim <= 0 || cfg.Clusters <= 0 {
		return nil, fmt.Errorf("generating a dataset: n, queries, dim and clusters must be positive (got %d, %d, %d, %d)", cfg.N, cfg.Queries, cfg.Dim, cfg.Clusters)
	}
	if cfg.Spread <= 0 {
		cfg.Spread = 0.1
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed_7ec7))
	centres := make([][]float32, cfg.Clusters)
	for c := range centres {
		centres[c] = make([]float32, cfg.Dim)
		for i := range centres[c] {
			centres[c][i] = float32(rng.Float64()*2 - 1)
		}
	}
	point := func(i int) []float32 {
		c := centres[i%cfg.Clusters]
		v := make([]float32, cfg.Dim)
		for j := range v {
			v[j] = c[j] + float32(rng.NormFloat64()*cfg.Spread)
		}
		return v
	}
	ds := &Dataset{Dim: cfg.Dim, Vectors: make([][]float32, cfg.N), Queries: make([][]float32, cfg.Queries)}
	for i := range ds.Vectors {
		ds.Vectors[i] = point(i)
	}
	for i := range ds.Queries {
		ds.Queries[i] = point(i)
	}
	return ds, nil
}

// Digest is the hex SHA-256 of the dataset's dimension, vectors and
// queries (as little-endian float32): it names the dataset in ground truth
// caches and in the workload digest.
func (d *Dataset) Digest() string {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(d.Dim))
	h.Write(b[:])
	for _, set := range [][][]float32{d.Vectors, d.Queries} {
		binary.LittleEndian.PutUint64(b[:], uint64(len(set)))
		h.Write(b[:])
		for _, v := range set {
			for _, x := range v {
				binary.LittleEndian.PutUint32(b[:4], math.Float32bits(x))
				h.Write(b[:4])
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// datasetLine is one line of a dataset file: a base vector or a query.
type datasetLine struct {
	Vector []float32 `json:"vector,omitempty"`
	Query  []float32 `json:"query,omitempty"`
}

// WriteFile writes the dataset as JSONL (see Parse).
func (d *Dataset) WriteFile(path string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, v := range d.Vectors {
		if err := enc.Encode(datasetLine{Vector: v}); err != nil {
			return fmt.Errorf("writing dataset %s: %w", path, err)
		}
	}
	for _, q := range d.Queries {
		if err := enc.Encode(datasetLine{Query: q}); err != nil {
			return fmt.Errorf("writing dataset %s: %w", path, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing dataset %s: %w", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing dataset %s: %w", path, err)
	}
	return nil
}

// ReadFile reads a dataset file (see Parse) under workload's default
// limits (see ReadFileContext).
func ReadFile(path string) (*Dataset, error) {
	return ReadFileContext(context.Background(), path, workload.Limits{})
}

// ReadFileContext reads a dataset file (see Parse) under the fileSize and
// lineSize limits of l (zero: workload's defaults; --limit sets them) and
// ctx: a file over its size, or one that never ends (a FIFO of blank
// lines, /dev/zero), is an error naming the file and the limit, and Ctrl-C
// stops the read.
func ReadFileContext(ctx context.Context, path string, l workload.Limits) (*Dataset, error) {
	l = l.WithDefaults()
	f, r, err := capread.Open(ctx, path, l.FileSize, "fileSize")
	if err != nil {
		return nil, fmt.Errorf("reading dataset: %w", err)
	}
	defer f.Close()
	ds, err := parse(r, l)
	if err != nil {
		return nil, fmt.Errorf("reading dataset %s: %w", path, err)
	}
	return ds, nil
}

// Parse reads a dataset in JSONL: one object a line, {"vector": [...]} for
// a base vector (its id is its rank among base vectors, from 0) or
// {"query": [...]} for a query. Blank lines are skipped. Every vector has
// the same length; there is at least one of each kind. A line is at most
// workload's default lineSize.
func Parse(r io.Reader) (*Dataset, error) {
	return parse(r, workload.Limits{})
}

// parse is Parse with lines under l's lineSize limit.
func parse(r io.Reader, l workload.Limits) (*Dataset, error) {
	maxLine := l.WithDefaults().LineSize
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, min(64<<10, maxLine)), int(min(maxLine, 1<<40)))
	ds := &Dataset{}
	lines := 0
	for n := 1; sc.Scan(); n++ {
		lines = n
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var l datasetLine
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, fmt.Errorf("line %d: %w (want {\"vector\": [...]} or {\"query\": [...]})", n, err)
		}
		v, set := l.Vector, &ds.Vectors
		switch {
		case len(l.Vector) > 0 && len(l.Query) > 0:
			return nil, fmt.Errorf("line %d: both vector and query: give one a line", n)
		case len(l.Query) > 0:
			v, set = l.Query, &ds.Queries
		case len(l.Vector) == 0:
			return nil, fmt.Errorf("line %d: no vector and no query", n)
		}
		if ds.Dim == 0 {
			ds.Dim = len(v)
		}
		if len(v) != ds.Dim {
			return nil, fmt.Errorf("line %d: %d dimensions, earlier lines have %d", n, len(v), ds.Dim)
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("line %d: a component is not a finite number", n)
			}
		}
		*set = append(*set, v)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d is over the lineSize limit of %d bytes: raise it with --limit lineSize=SIZE (limits.lineSize) if the file is right", lines+1, maxLine)
		}
		return nil, fmt.Errorf("after line %d: %w", lines, err)
	}
	if len(ds.Vectors) == 0 || len(ds.Queries) == 0 {
		return nil, fmt.Errorf("%d base vectors and %d queries: need at least one of each", len(ds.Vectors), len(ds.Queries))
	}
	return ds, nil
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
