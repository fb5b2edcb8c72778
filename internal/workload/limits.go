package workload

import (
	"context"
	"fmt"
	"io"

	"github.com/spate-dev/spate/internal/capread"
)

// Defaults of Limits.
const (
	DefaultFileSize     = 1 << 30
	DefaultLineSize     = 64 << 20
	DefaultPromptTokens = 2_000_000
)

// Limits bound what the workload reads from files and makes: a file, a
// line of a line-based file, and a synthetic prompt (zero: the defaults).
type Limits struct {
	FileSize, LineSize int64
	PromptTokens       int
}

// WithDefaults returns l with each zero limit set to its default.
func (l Limits) WithDefaults() Limits {
	if l.FileSize <= 0 {
		l.FileSize = DefaultFileSize
	}
	if l.LineSize <= 0 {
		l.LineSize = DefaultLineSize
	}
	if l.PromptTokens <= 0 {
		l.PromptTokens = DefaultPromptTokens
	}
	return l
}

// readFile reads a file whole under the file size limit and ctx.
func readFile(ctx context.Context, path string, l Limits) ([]byte, error) {
	return capread.ReadFile(ctx, path, l.WithDefaults().FileSize, "fileSize")
}

// lineTooLong is the error of a line over the line size limit.
func lineTooLong(name string, line int, l Limits) error {
	return fmt.Errorf("%s, line %d: the line is over the lineSize limit of %d bytes: raise it with --limit lineSize=SIZE (limits.lineSize) if the file is right", name, line, l.WithDefaults().LineSize)
}

// bounded reads r under the file size limit and ctx.
func bounded(ctx context.Context, r io.Reader, name string, l Limits) io.Reader {
	return capread.Reader(ctx, r, l.WithDefaults().FileSize, name, "fileSize")
}
