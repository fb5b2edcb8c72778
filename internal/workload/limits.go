package workload

import (
	"context"
	"errors"
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

// readLines reads a dataset file whole under the file size limit, ctx and
// the line size limit, which is checked as the bytes come in (o: how),
// so that a file without line ends (/dev/zero, a 1 GiB CSV header) is
// refused at the line limit rather than read whole first and then held
// again by the parser. Its errors name the file (and the line).
func readLines(ctx context.Context, path string, o capread.LineOptions, l Limits) ([]byte, error) {
	l = l.WithDefaults()
	f, r, err := capread.Open(ctx, path, l.FileSize, "fileSize")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	o.Name, o.Key = "dataset "+path, "lineSize"
	return readChunks(capread.Lines(r, l.LineSize, o))
}

// chunk is the most readChunks reads at a time.
const chunk = 1 << 20

// readChunks reads r whole a chunk at a time, and joins the chunks at
// the end: a read that fails part way (a line too long) has allocated
// what it read and no more, where io.ReadAll grows its buffer by a
// quarter at a time, allocating five times what it read in all (320 MiB
// to refuse a line at the default 64 MiB limit, and up to twice that held
// at once).
func readChunks(r io.Reader) ([]byte, error) {
	var (
		chunks [][]byte
		total  int
	)
	// A small file takes a small chunk.
	size := 64 << 10
	for {
		c := make([]byte, size)
		size = min(2*size, chunk)
		n, err := io.ReadFull(r, c)
		if n > 0 {
			chunks = append(chunks, c[:n])
			total += n
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	b := make([]byte, 0, total)
	for _, c := range chunks {
		b = append(b, c...)
	}
	return b, nil
}

// lineTooLong is the error of a line over the line size limit.
func lineTooLong(name string, line int, l Limits) error {
	return fmt.Errorf("%s, line %d: the line is over the lineSize limit of %d bytes: raise it with --limit lineSize=SIZE (limits.lineSize) if the file is right", name, line, l.WithDefaults().LineSize)
}

// bounded reads r under the file size limit and ctx.
func bounded(ctx context.Context, r io.Reader, name string, l Limits) io.Reader {
	return capread.Reader(ctx, r, l.WithDefaults().FileSize, name, "fileSize")
}
