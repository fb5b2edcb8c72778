// Package sse reads Server-Sent Events streams with a monotonic arrival
// timestamp per event and no per-event allocation.
//
// It is deliberately small: it knows the SSE framing (field lines, blank-line
// dispatch, comments, multi-line data) and nothing of what the data means.
//
// Stage: client (the raw SSE reader of the openai client).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package sse

import (
	"bufio"
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
	src     stampReader
	br      *bufio.Reader
	maxLine int
	line    []byte // accumulates lines longer than the bufio buffer
	data    []byte
	name    []byte
	hasData bool
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
	if rd.br == nil {
		rd.br = bufio.NewReaderSize(&rd.src, 32<<10)
	} else {
		rd.br.Reset(&rd.src)
	}
	rd.maxLine = maxLine
	rd.line = rd.line[:0]
	rd.data = rd.data[:0]
	rd.name = rd.name[:0]
	rd.hasData = false
}

// readLine returns the next line without its terminator.
func (rd *Reader) readLine() ([]byte, error) {
	l, err := rd.br.ReadSlice('\n')
	if err == nil {
		return trimEOL(l), nil
	}
	if errors.Is(err, bufio.ErrBufferFull) {
		rd.line = append(rd.line[:0], l...)
		for {
			l, err = rd.br.ReadSlice('\n')
			if len(rd.line)+len(l) > rd.maxLine {
				return nil, fmt.Errorf("%w: longer than %d bytes", ErrLineTooLong, rd.maxLine)
			}
			rd.line = append(rd.line, l...)
			if err == nil {
				return trimEOL(rd.line), nil
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				break
			}
		}
		l = rd.line
	}
	if err == io.EOF && len(l) > 0 {
		// A last line with no terminator still counts.
		return trimEOL(l), nil
	}
	return nil, err
}

func trimEOL(l []byte) []byte {
	if n := len(l); n > 0 && l[n-1] == '\n' {
		l = l[:n-1]
	}
	if n := len(l); n > 0 && l[n-1] == '\r' {
		l = l[:n-1]
	}
	return l
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
		}
		// id and retry are ignored: a benchmark client never reconnects.
	}
}

func (rd *Reader) fill(ev *Event) {
	ev.Name = rd.name
	ev.Data = rd.data
	ev.At = rd.src.last
}

// LastRead is when the most recent read from the underlying stream returned.
func (rd *Reader) LastRead() time.Time { return rd.src.last }
