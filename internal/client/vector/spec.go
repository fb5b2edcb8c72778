package vector

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spate-dev/spate/internal/workload"
)

// ErrGenSpec marks a malformed gen:N,DIM,CLUSTERS,QUERIES dataset spec
// (test with errors.Is).
var ErrGenSpec = errors.New("malformed gen: dataset spec")

type genSpecError struct{ msg string }

func (e genSpecError) Error() string        { return e.msg }
func (e genSpecError) Is(target error) bool { return target == ErrGenSpec }

// ParseGen reads gen:N,DIM,CLUSTERS,QUERIES: clustered vectors generated
// from seed.
func ParseGen(s string, seed uint64) (GenConfig, error) {
	parts := strings.Split(strings.TrimPrefix(s, "gen:"), ",")
	if len(parts) != 4 {
		return GenConfig{}, genSpecError{fmt.Sprintf("%q: want gen:N,DIM,CLUSTERS,QUERIES, e.g. gen:2000,64,20,100", s)}
	}
	var n [4]int
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v <= 0 {
			return GenConfig{}, genSpecError{fmt.Sprintf("%q: %q is not a positive integer", s, p)}
		}
		n[i] = v
	}
	return GenConfig{N: n[0], Dim: n[1], Clusters: n[2], Queries: n[3], Spread: 0.1, Seed: seed}, nil
}

// LoadDataset reads a dataset file under l and ctx (see ReadFileContext), or
// generates one from a gen:N,DIM,CLUSTERS,QUERIES spec (an ErrGenSpec when
// malformed).
func LoadDataset(ctx context.Context, spec string, seed uint64, l workload.Limits) (*Dataset, error) {
	if strings.HasPrefix(spec, "gen:") {
		cfg, err := ParseGen(spec, seed)
		if err != nil {
			return nil, err
		}
		return Generate(cfg)
	}
	return ReadFileContext(ctx, spec, l)
}

// TruthDir is the directory caching ground truth: dir, or by default the
// user cache dir's spate/truth.
func TruthDir(dir string) string {
	if dir != "" {
		return dir
	}
	if c, err := os.UserCacheDir(); err == nil {
		return filepath.Join(c, "spate", "truth")
	}
	return filepath.Join("spate-results", "truth")
}
