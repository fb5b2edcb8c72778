// Package capread reads bytes from outside (datasets, query logs, length
// files, images, experiment and result files) under a size limit, and stops when its context is
// cancelled, so that a file that never ends (/dev/zero, a FIFO) can neither
// take the machine's memory nor keep Ctrl-C from working.
//
// A FIFO (or a pipe such as a shell's <(producer)) blocks twice: its open
// waits for a writer, and a read waits for data. Open waits for the open
// in a goroutine it can give up on when its context is cancelled, and then
// releases that goroutine by being the writer for a moment, so that none
// outlives the call; a read of a pipe waits in the runtime's poller, which
// a deadline set on cancel ends.
//
// Stage: workload (its readers), and every command's file reading.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package capread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// ErrTooLarge is the error (errors.Is) of input over its limit.
var ErrTooLarge = errors.New("over its size limit")

// LimitError says which input went over which limit, and how to raise it.
type LimitError struct {
	Name  string // the file
	Limit int64  // bytes
	Key   string // the --limit key that sets it, e.g. fileSize ("": none)
}

func (e *LimitError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s is over the size limit of %s", e.Name, size(e.Limit))
	}
	return fmt.Sprintf("%s is over the %s limit of %s: raise it with --limit %s=SIZE (limits.%s in an experiment file) if the file is right",
		e.Name, e.Key, size(e.Limit), e.Key, e.Key)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *LimitError) Is(target error) bool { return target == ErrTooLarge }

func size(n int64) string {
	for _, u := range []struct {
		s string
		n int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.n && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + " " + u.s
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// Reader returns r bounded to limit bytes (0: no limit) and to ctx: a read
// past the limit fails with a *LimitError naming name and key, a read after
// ctx is done with ctx's error.
func Reader(ctx context.Context, r io.Reader, limit int64, name, key string) io.Reader {
	if ctx == nil {
		ctx = context.Background()
	}
	return &reader{ctx: ctx, r: r, left: limit, limit: limit, name: name, key: key}
}

type reader struct {
	ctx         context.Context
	r           io.Reader
	left, limit int64
	name, key   string
	stop        func() bool // ends Open's watch of ctx (nil: none)
}

func (c *reader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, fmt.Errorf("reading %s: %w", c.name, err)
	}
	n, err := c.read(p)
	if err != nil && c.stop != nil {
		// The read is over: ctx need no longer wake it.
		c.stop()
	}
	if err != nil && err != io.EOF && c.ctx.Err() != nil {
		// A read of a pipe ended by the deadline Open sets on cancel.
		return n, fmt.Errorf("reading %s: %w", c.name, c.ctx.Err())
	}
	return n, err
}

func (c *reader) read(p []byte) (int, error) {
	if c.limit > 0 {
		if c.left <= 0 {
			// One byte more tells a file of exactly limit bytes from a
			// longer one.
			var one [1]byte
			n, err := c.r.Read(one[:])
			if n > 0 {
				return 0, &LimitError{Name: c.name, Limit: c.limit, Key: c.key}
			}
			return 0, err
		}
		if int64(len(p)) > c.left {
			p = p[:c.left]
		}
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// Limits of the files read whole that have no --limit of their own: far
// above any real one, far below what a file that never ends (/dev/zero)
// would take.
const (
	// SettingsLimit bounds a YAML file of settings: an experiment, a
	// workload, a workflow, a probe suite, a fault set.
	SettingsLimit = 16 << 20
	// DataLimit bounds a result, a drift baseline or a tokenizer.json.
	DataLimit = 128 << 20
)

// ReadFile reads the file at path whole, under limit bytes (0: none) and
// ctx; key names the limit in the error.
func ReadFile(ctx context.Context, path string, limit int64, key string) ([]byte, error) {
	f, r, err := Open(ctx, path, limit, key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(r)
}

// Open opens the file at path for reading under limit bytes (0: none) and
// ctx (see Reader); a regular file over the limit is refused unread. The
// caller closes the file.
//
// Cancelling ctx ends a wait for a FIFO's writer (the open) and a read of a
// pipe that waits for data, with ctx's error: a FIFO nobody writes to
// cannot keep Ctrl-C from working.
func Open(ctx context.Context, path string, limit int64, key string) (*os.File, io.Reader, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	f, err := open(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && limit > 0 && fi.Size() > limit {
		f.Close()
		return nil, nil, &LimitError{Name: path, Limit: limit, Key: key}
	}
	// A read of a pipe waits in the runtime's poller, which a deadline in
	// the past wakes; for a file that cannot wait (a regular file) the
	// deadline is refused, which is fine. The watch ends when the read
	// does (end of file, an error) or with ctx.
	r := Reader(ctx, f, limit, path, key).(*reader)
	r.stop = context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	return f, r, nil
}

// open opens path for reading; a FIFO's open, which waits for a writer,
// ends when ctx is cancelled.
func open(ctx context.Context, path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 || ctx.Done() == nil {
		return os.Open(path)
	}
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		done <- opened{f, err}
	}()
	select {
	case o := <-done:
		return o.f, o.err
	case <-ctx.Done():
	}
	// The goroutine still waits for a writer: be one for a moment until it
	// has returned (tried for releaseFor; see releasePipe).
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.After(releaseFor)
	for {
		releasePipe(path)
		select {
		case o := <-done:
			if o.f != nil {
				o.f.Close()
			}
			return nil, fmt.Errorf("opening %s: %w", path, ctx.Err())
		case <-tick.C:
		case <-giveUp:
			// A FIFO this process may read but not write: the goroutine
			// waits in its open until a writer comes or the process
			// ends, holding one thread and no file.
			return nil, fmt.Errorf("opening %s: %w", path, ctx.Err())
		}
	}
}

// releaseFor bounds the wait to release an abandoned FIFO open.
const releaseFor = time.Second
