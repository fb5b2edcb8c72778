package compare

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spate-dev/spate/result"
)

// ErrUsage marks inputs a comparison cannot start from (test with
// errors.Is).
var ErrUsage = errors.New("compare usage")

type usageError struct{ err error }

func (e usageError) Error() string        { return e.err.Error() }
func (e usageError) Is(target error) bool { return target == ErrUsage }

// ReadSides reads the result files of each side, each a list of files or
// globs; an error names the side by its flag (--base, --new, --base-ref,
// --new-ref). The reads stop when ctx is done.
func ReadSides(ctx context.Context, base, nw, baseRef, newRef []string) (Sides, error) {
	var s Sides
	for _, side := range []struct {
		flag string
		pats []string
		dst  *[]Input
	}{{"--base", base, &s.Base}, {"--new", nw, &s.New}, {"--base-ref", baseRef, &s.BaseRef}, {"--new-ref", newRef, &s.NewRef}} {
		for _, p := range side.pats {
			paths := []string{p}
			if strings.ContainsAny(p, "*?[") {
				m, err := filepath.Glob(p)
				if err != nil {
					return s, usageError{fmt.Errorf("%s %q: %v", side.flag, p, err)}
				}
				if len(m) == 0 {
					return s, usageError{fmt.Errorf("%s %q matches no file", side.flag, p)}
				}
				paths = m
			}
			for _, path := range paths {
				r, err := result.ReadContext(ctx, path)
				if err != nil {
					return s, fmt.Errorf("%s: %w", side.flag, err)
				}
				*side.dst = append(*side.dst, Input{Path: path, Result: r})
			}
		}
	}
	return s, nil
}
