package capread

import (
	"bytes"
	"fmt"
	"io"
)

// LineError says which line of which input went over the line limit, and
// how to raise it.
type LineError struct {
	Name  string // the file
	Line  int    // 1-based: the line the long line (or CSV record) starts on
	Limit int64  // bytes
	Key   string // the --limit key that sets it, e.g. lineSize ("": none)
}

func (e *LineError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s, line %d: the line is over the line size limit of %s", e.Name, e.Line, size(e.Limit))
	}
	return fmt.Sprintf("%s, line %d: the line is over the %s limit of %s: raise it with --limit %s=SIZE (limits.%s in an experiment file) if the file is right",
		e.Name, e.Line, e.Key, size(e.Limit), e.Key, e.Key)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *LineError) Is(target error) bool { return target == ErrTooLarge }

// LineOptions tune Lines.
type LineOptions struct {
	// Name names the input in errors and Key the --limit that sets the
	// limit ("": none).
	Name, Key string
	// CSV bounds records rather than lines: a line end within a quoted
	// field ("...") does not end one.
	CSV bool
	// UnlessArray stops the check when the input is a JSON array (its
	// first byte other than white space is '['): a JSON document, not
	// lines, bounded by the file's size limit alone.
	UnlessArray bool
}

// Lines returns r bounded to lines of limit bytes (0: no limit), line end
// excluded: a read that would take a line past the limit fails with a
// *LineError naming the line it started on, so a file without line ends
// (/dev/zero, a 1 GiB file of one line) is refused at the limit, before a
// reader that reads whole lines or whole files holds more of it.
func Lines(r io.Reader, limit int64, o LineOptions) io.Reader {
	return &lines{r: r, limit: limit, o: o, line: 1, start: 1}
}

type lines struct {
	r     io.Reader
	limit int64
	o     LineOptions
	run   int64 // bytes of the line (or record) read so far
	line  int   // the line being read
	start int   // the line the line (or record) began on
	quote bool  // within a quoted CSV field
	seen  bool  // a byte other than white space was read
	off   bool  // UnlessArray found an array: no more checks
}

func (l *lines) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if l.limit <= 0 || l.off {
		return n, err
	}
	if lerr := l.scan(p[:n]); lerr != nil {
		return 0, lerr
	}
	return n, err
}

// scan counts b into the line being read.
func (l *lines) scan(b []byte) error {
	if l.o.UnlessArray && !l.seen {
		if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 {
			l.seen = true
			if t[0] == '[' {
				l.off = true
				return nil
			}
		}
	}
	stops := "\n"
	if l.o.CSV {
		stops = "\n\""
	}
	for len(b) > 0 {
		i := bytes.IndexAny(b, stops)
		if i < 0 {
			l.run += int64(len(b))
			break
		}
		l.run += int64(i)
		if l.run > l.limit {
			break
		}
		if b[i] == '"' {
			// "" within a quoted field is a quote: it flips twice.
			l.quote = !l.quote
			l.run++
		} else {
			l.line++
			if l.quote {
				l.run++
			} else {
				l.run, l.start = 0, l.line
			}
		}
		b = b[i+1:]
	}
	if l.run > l.limit {
		return &LineError{Name: l.o.Name, Line: l.start, Limit: l.limit, Key: l.o.Key}
	}
	return nil
}
