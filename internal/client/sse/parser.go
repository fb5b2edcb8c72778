package sse

import (
	"bytes"
	"fmt"
	"time"
)

// Parser is the push form of Reader: it is fed the bytes of a stream as
// they arrive, each batch with the time of the read that delivered it, and
// calls back with every event the batch completes. It keeps only the
// unfinished last line between batches, so one reactor goroutine can parse
// many streams with a shared read buffer.
//
// Events carry the same fields and timestamps as Reader's: At is the stamp
// of the batch that held the event's dispatching blank line.
type Parser struct {
	maxLine int
	line    []byte // the unfinished last line of the previous batch
	data    []byte
	// ref is the event's data while it is one line, not yet copied to
	// data (hasRef): a slice of the batch or of line, valid until Feed
	// returns or line is written, when own copies it. An event read in
	// one batch, as most are, is passed on without a copy.
	ref     []byte
	hasRef  bool
	name    []byte
	hasData bool
	ev      Event
	// cr says the last line ended with a CR that was the last byte of its
	// batch: an LF that starts the next batch belongs to that line end.
	cr    bool
	stray []byte // see Stray
}

// Stray returns the stream's lines that are no SSE field, as Reader.Stray.
func (p *Parser) Stray() []byte { return p.stray }

// Reset readies p for a new stream, keeping its buffers, with lines bounded
// by maxLine bytes (DefaultMaxLine when maxLine <= 0).
func (p *Parser) Reset(maxLine int) {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	p.maxLine = maxLine
	p.line = p.line[:0]
	p.data = p.data[:0]
	p.ref, p.hasRef = nil, false
	p.name = p.name[:0]
	p.hasData = false
	p.cr = false
	p.stray = p.stray[:0]
}

// Feed parses b, which arrived at at, calling fn for every event it
// completes; the Event is valid only during the call. An error from fn
// stops parsing and is returned as is.
func (p *Parser) Feed(b []byte, at time.Time, fn func(*Event) error) error {
	if p.cr {
		// The CR that ended the last line was the end of the batch before:
		// an LF right after it is the same line end.
		p.cr = false
		if len(b) > 0 && b[0] == '\n' {
			b = b[1:]
		}
	}
	// cr is the index of b's first CR, len(b) when it has none: b is
	// searched for a CR once, not line by line, as most streams end their
	// lines with LFs alone.
	cr := crIndex(b)
	for len(b) > 0 {
		i, w := bytes.IndexByte(b, '\n'), 1
		if cr < len(b) && (i < 0 || cr < i) {
			// A line ended by a CR, alone or in a CRLF.
			i = cr
			switch {
			case cr+1 < len(b) && b[cr+1] == '\n':
				w = 2
			case cr+1 == len(b):
				p.cr = true
			}
		}
		if i < 0 {
			p.own()
			if len(p.line)+len(b) > p.maxLine {
				return fmt.Errorf("%w: longer than %d bytes", ErrLineTooLong, p.maxLine)
			}
			p.line = append(p.line, b...)
			return nil
		}
		l := b[:i]
		b = b[i+w:]
		if cr -= i + w; cr < 0 {
			cr = crIndex(b) // that CR ended this line
		}
		if len(p.line) > 0 {
			if len(p.line)+len(l) > p.maxLine {
				p.own()
				return fmt.Errorf("%w: longer than %d bytes", ErrLineTooLong, p.maxLine)
			}
			p.line = append(p.line, l...)
			l = p.line
		} else if len(l) > p.maxLine {
			p.own()
			return fmt.Errorf("%w: longer than %d bytes", ErrLineTooLong, p.maxLine)
		}
		err := p.lineDone(l, at, fn)
		p.line = p.line[:0]
		if err != nil {
			p.own()
			return err
		}
	}
	p.own()
	return nil
}

// own copies a pending one-line data (ref) to p's own buffer.
func (p *Parser) own() {
	if p.hasRef {
		p.data = append(p.data[:0], p.ref...)
		p.ref, p.hasRef = nil, false
	}
}

// crIndex is the index of b's first CR, len(b) when it has none.
func crIndex(b []byte) int {
	if r := bytes.IndexByte(b, '\r'); r >= 0 {
		return r
	}
	return len(b)
}

// End is the end of the stream at at: a last line without its terminator
// counts, and an event pending without its blank line is still dispatched.
func (p *Parser) End(at time.Time, fn func(*Event) error) error {
	if len(p.line) > 0 {
		err := p.lineDone(p.line, at, fn)
		p.line = p.line[:0]
		if err != nil {
			return err
		}
	}
	if p.hasData {
		p.hasData = false
		return p.dispatch(at, fn)
	}
	return nil
}

func (p *Parser) dispatch(at time.Time, fn func(*Event) error) error {
	p.ev.Name, p.ev.Data, p.ev.At = p.name, p.data, at
	if p.hasRef {
		p.ev.Data = p.ref
		p.ref, p.hasRef = nil, false
	}
	err := fn(&p.ev)
	p.data = p.data[:0]
	p.name = p.name[:0]
	p.hasData = false
	return err
}

// lineDone handles one complete line, as Reader.Next does.
func (p *Parser) lineDone(line []byte, at time.Time, fn func(*Event) error) error {
	if len(line) == 0 {
		if p.hasData {
			return p.dispatch(at, fn)
		}
		p.name = p.name[:0]
		return nil
	}
	if line[0] == ':' {
		return nil // comment
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
		if !p.hasData {
			p.ref, p.hasRef, p.hasData = value, true, true
			return nil
		}
		p.own()
		p.data = append(p.data, '\n')
		p.data = append(p.data, value...)
	case "event":
		p.name = append(p.name[:0], value...)
	case "id", "retry":
		// Ignored: a benchmark client never reconnects.
	default:
		p.stray = keepStray(p.stray, line)
	}
	return nil
}
