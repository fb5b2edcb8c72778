// Package sse reads Server-Sent Events streams with a monotonic arrival
// timestamp per event and no per-event allocation.
//
// It is deliberately small: it knows the SSE framing (field lines ended by
// CRLF, LF or CR, as the specification allows, blank-line dispatch,
// comments, multi-line data) and nothing of what the data means.
//
// Stage: client (the raw SSE reader of the openai client).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// DefaultMaxLine is the longest line a Reader accepts unless told otherwise.
const DefaultMaxLine = 1 << 20

// ErrLineTooLong is returned (wrapped) when a line exceeds the Reader's bound.
var ErrLineTooLong = errors.New("sse: line too long")

// Event is one dispatched server-sent event. Its byte slices are valid only
// until the next call to Next.
type Event struct {
	// Name is the event field ("" when absent, which means "message").
	Name []byte
	// Data is the data field; several data lines are joined with '\n'.
	Data []byte
	// At is when the last byte of the event arrived from the network: the
	// time of the read that completed it, with its monotonic reading.
	At time.Time
}

// Clock returns the current time. It is swappable in tests.
type Clock func() time.Time

// stampReader records when each successful Read returned.
type stampReader struct {
	r    io.Reader
	now  Clock
	last time.Time
}

func (s *stampReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.last = s.now()
	}
	return n, err
}

// Reader parses an SSE stream.
type Reader struct {
	src stampReader
	// buf[r:w] is what has been read and not parsed. A line returned by
	// readLine is a slice of buf until the next read (which may move it).
	buf     []byte
	r, w    int
	maxLine int
	line    []byte // accumulates lines longer than buf
	data    []byte
	name    []byte
	hasData bool
	// cr says the last line ended with a CR that was the last byte
	// buffered: an LF that follows it belongs to that line end.
	cr bool
	// clean is how many of the buffered bytes are known to hold no CR;
	// a CR at that index is known too.
	clean int
	stray []byte // see Stray
}

// NewReader returns a Reader of r that rejects lines longer than maxLine
// bytes (DefaultMaxLine when maxLine <= 0). now may be nil for time.Now.
func NewReader(r io.Reader, maxLine int, now Clock) *Reader {
	rd := &Reader{}
	rd.Reset(r, maxLine, now)
	return rd
}

// Reset makes the Reader read from r, keeping its buffers for reuse.
func (rd *Reader) Reset(r io.Reader, maxLine int, now Clock) {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	if now == nil {
		now = time.Now
	}
	rd.src = stampReader{r: r, now: now}
	if rd.buf == nil {
		rd.buf = make([]byte, bufSize)
	}
	rd.r, rd.w = 0, 0
	rd.maxLine = maxLine
	rd.line = rd.line[:0]
	rd.data = rd.data[:0]
	rd.name = rd.name[:0]
	rd.hasData = false
	rd.cr, rd.clean = false, 0
	rd.stray = rd.stray[:0]
}

// bufSize is the size of a Reader's buffer: one read asks for up to that.
const bufSize = 32 << 10

// more reads once more into the buffer, after what it holds (moved to its
// start): at least one byte, or an error.
func (rd *Reader) more() error {
	if rd.r > 0 {
		rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r = 0
	}
	for range 100 {
		n, err := rd.src.Read(rd.buf[rd.w:])
		rd.w += n
		if n > 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}

// readLine returns the next line without its terminator: CRLF, LF or CR,
// as the SSE specification allows. It looks for the line's end in what is
// buffered and reads only when that holds none, so that a line ended by a
// lone CR is returned as soon as the CR arrives, not when a later LF does.
func (rd *Reader) readLine() ([]byte, error) {
	rd.line = rd.line[:0]
	long := false // rd.line holds the line's start (a line over the buffer)
	for {
		buf := rd.buf[rd.r:rd.w]
		if len(buf) == 0 {
			if err := rd.more(); err != nil {
				if err == io.EOF && long {
					return rd.line, nil // a last line with no terminator still counts
				}
				return nil, err
			}
			continue
		}
		if rd.cr {
			// The CR that ended the last line was the end of what had
			// come: an LF right after it is the same line end.
			rd.cr = false
			if buf[0] == '\n' {
				rd.r++
				rd.clean = max(rd.clean-1, 0)
				continue
			}
		}
		// The buffered bytes are searched for a CR once, not line by line
		// (most streams end their lines with LFs alone): rd.clean moves to
		// the first CR, or to the end when there is none.
		if c := rd.clean; c < len(buf) && buf[c] != '\r' {
			rd.clean = c + crIndex(buf[c:])
		}
		i, w := bytes.IndexByte(buf, '\n'), 1
		if c := rd.clean; c < len(buf) && (i < 0 || c < i) {
			// A line ended by a CR, alone or in a CRLF.
			i = c
			switch {
			case c+1 < len(buf) && buf[c+1] == '\n':
				w = 2
			case c+1 == len(buf):
				rd.cr = true
			}
		}
		if i >= 0 {
			rd.r += i + w
			rd.clean = max(rd.clean-i-w, 0)
			l := buf[:i]
			if long {
				if len(rd.line)+len(l) > rd.maxLine {
					return nil, fmt.Errorf("%w: longer than %d bytes", ErrLineTooLong, rd.maxLine)
				}
				rd.line = append(rd.line, l...)
				l = rd.line
			}
			return l, nil
		}
		if len(buf) < len(rd.buf) {
			// The line goes on past what has come: read more of it.
			if err := rd.more(); err != nil {
				if err != io.EOF {
					return nil, err
				}
				// A last line with no terminator still counts.
				l := append(rd.line, rd.buf[rd.r:rd.w]...)
				rd.line = l
				rd.r, rd.clean = rd.w, 0
				return l, nil
			}
			continue
		}
		// A line longer than the buffer: keep its start aside.
		if len(rd.line)+len(buf) > rd.maxLine {
			return nil, fmt.Errorf("%w: longer than %d bytes", ErrLineTooLong, rd.maxLine)
		}
		rd.line = append(rd.line, buf...)
		long = true
		rd.r, rd.clean = rd.w, 0
	}
}

// Next reads up to and including the next event and fills ev. It returns
// io.EOF at the clean end of the stream; an event pending at EOF without its
// blank line is still dispatched first.
func (rd *Reader) Next(ev *Event) error {
	rd.data = rd.data[:0]
	rd.name = rd.name[:0]
	rd.hasData = false
	for {
		line, err := rd.readLine()
		if err != nil {
			if err == io.EOF && rd.hasData {
				rd.fill(ev)
				return nil
			}
			return err
		}
		if len(line) == 0 {
			if rd.hasData {
				rd.fill(ev)
				return nil
			}
			rd.name = rd.name[:0]
			continue
		}
		if line[0] == ':' {
			continue // comment
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if rd.hasData {
				rd.data = append(rd.data, '\n')
			}
			rd.data = append(rd.data, value...)
			rd.hasData = true
		case "event":
			rd.name = append(rd.name[:0], value...)
		case "id", "retry":
			// Ignored: a benchmark client never reconnects.
		default:
			rd.stray = keepStray(rd.stray, line)
		}
	}
}

func (rd *Reader) fill(ev *Event) {
	ev.Name = rd.name
	ev.Data = rd.data
	ev.At = rd.src.last
}

// Stray returns the stream's lines that are no field of the SSE
// specification (nor comments), which the specification has a reader
// ignore: the first MaxStray bytes of them, joined by LFs. A server that
// answers a stream request with a JSON error body, or ends a stream with
// one, sends it in such lines. It is valid until the next Reset.
func (rd *Reader) Stray() []byte { return rd.stray }

// MaxStray bounds what Stray keeps of a stream's stray lines.
const MaxStray = 2048

// keepStray appends line to the stray lines kept, up to MaxStray bytes.
func keepStray(kept, line []byte) []byte {
	if len(kept) >= MaxStray {
		return kept
	}
	if len(kept) > 0 {
		kept = append(kept, '\n')
	}
	return append(kept, line[:min(len(line), MaxStray-len(kept))]...)
}

// LastRead is when the most recent read from the underlying stream returned.
func (rd *Reader) LastRead() time.Time { return rd.src.last }
