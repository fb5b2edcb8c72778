package rawhttp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Handler receives one response as it arrives, on the reactor goroutine:
// it must be quick and must not block. A Handler's error ends the response
// (and its connection) and is returned by Do.
type Handler interface {
	// Header is called once the status line and headers have arrived, with
	// the read that completed them.
	Header(status int, rd Read) error
	// Body is called with each piece of the body, de-chunked, with the
	// read that delivered it. p is valid only during the call.
	Body(p []byte, rd Read) error
}

// FieldHandler is a Handler that also reads the response's header
// fields: Field is called with each (name as sent, value trimmed) before
// Header; name and value are valid only during the call.
type FieldHandler interface {
	Handler
	Field(name, value []byte)
}

// Read is what is known of when the bytes of one read arrived.
type Read struct {
	// At is when they arrived: the kernel's receive time of the last of
	// them, where the socket reports it (Kernel), else when the read
	// returned. It carries a monotonic reading.
	At time.Time
	// Kernel says At is the kernel's receive time.
	Kernel bool
	// Bound bounds how much earlier than At any of the read's bytes came:
	// since the reactor can last have seen the socket empty (see the
	// reactor's loop). Over 1 ms, events of the read other than its last
	// may be stamped that much late.
	Bound time.Duration
	// N numbers the reads of a response from 1: a read whose bytes hold
	// several chunks reaches the Handler once per chunk, with one N.
	N int
	// Chunk numbers the chunks of a chunked body from 1 (0: the body is
	// not chunked). A server's chunk is most often one write of it: the
	// bytes of one chunk arrived together, those of a read's earlier
	// chunks may have come earlier than its stamp.
	Chunk int
}

// maxHeader bounds a response's status line and headers.
const maxHeader = 64 << 10

// ErrMalformed is returned (wrapped) for a response that is not HTTP/1.x.
var ErrMalformed = errors.New("malformed HTTP response")

// parser states.
const (
	stHeader = iota
	stLength
	stChunkSize
	stChunkData
	stChunkEnd
	stTrailer
	stUntilClose
	stDone
)

// respParser is a push parser of one HTTP/1.1 response: fed the bytes of
// each read, it hands the body to a Handler and says when the response is
// complete. It keeps only a partial header or chunk-size line between
// reads.
type respParser struct {
	state     int
	line      []byte // partial header block, chunk-size or trailer line
	status    int
	left      int64 // bytes left in the body (stLength) or chunk (stChunkData)
	keepAlive bool  // the connection may carry another request after this
	head      bool  // the request was HEAD: no body whatever the headers say
	chunk     int   // the chunks of a chunked body begun so far
}

func (p *respParser) reset(head bool) {
	p.state, p.line, p.status, p.left, p.keepAlive, p.head, p.chunk = stHeader, p.line[:0], 0, 0, false, head, 0
}

// feed parses b, read at at. It returns the number of bytes of b that
// belong to this response: fewer than len(b) only when the response is
// complete and b holds more, which a client that does not pipeline never
// asked for (the caller keeps the response and drops the connection).
func (p *respParser) feed(b []byte, rd Read, h Handler) (used int, done bool, err error) {
	n := len(b)
	for len(b) > 0 && p.state != stDone {
		switch p.state {
		case stHeader:
			// The header block, once whole: straight from b when it holds
			// all of it (most responses), else from the bytes kept.
			var block []byte
			data, start := b, 0
			if len(p.line) > 0 {
				start = max(len(p.line)-3, 0)
				p.line = append(p.line, b...)
				data = p.line
			}
			if p.status == 0 && len(data) >= 9 && IsHTTP2Frame(data) {
				return 0, false, ErrHTTP2
			}
			hdrEnd := headerEnd(data, start)
			if hdrEnd < 0 {
				if len(data) > maxHeader {
					return 0, false, fmt.Errorf("%w: headers longer than %d bytes", ErrMalformed, maxHeader)
				}
				if len(p.line) == 0 {
					p.line = append(p.line, b...)
				}
				return n, false, nil
			}
			block = data[:hdrEnd]
			b = b[len(b)-(len(data)-hdrEnd):] // the bytes of b past the headers
			if err := p.header(block, h); err != nil {
				return 0, false, err
			}
			p.line = p.line[:0]
			if p.status >= 100 && p.status < 200 {
				p.state = stHeader // an interim response: the real one follows
				continue
			}
			if err := h.Header(p.status, rd); err != nil {
				return 0, false, err
			}
		case stLength:
			k := int(min(int64(len(b)), p.left))
			if err := h.Body(b[:k], rd); err != nil {
				return 0, false, err
			}
			b, p.left = b[k:], p.left-int64(k)
			if p.left == 0 {
				p.state = stDone
			}
		case stUntilClose:
			if err := h.Body(b, rd); err != nil {
				return 0, false, err
			}
			b = b[len(b):]
		case stChunkSize, stTrailer, stChunkEnd:
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				if len(p.line)+len(b) > 4096 {
					return 0, false, fmt.Errorf("%w: chunk line longer than 4096 bytes", ErrMalformed)
				}
				p.line = append(p.line, b...)
				b = b[len(b):]
				continue
			}
			l := b[:i]
			if len(p.line) > 0 {
				p.line = append(p.line, l...)
				l = p.line
			}
			b = b[i+1:]
			l = bytes.TrimSuffix(l, []byte("\r"))
			if err := p.chunkLine(l); err != nil {
				return 0, false, err
			}
			p.line = p.line[:0]
		case stChunkData:
			k := int(min(int64(len(b)), p.left))
			rd.Chunk = p.chunk
			if err := h.Body(b[:k], rd); err != nil {
				return 0, false, err
			}
			b, p.left = b[k:], p.left-int64(k)
			if p.left == 0 {
				p.state = stChunkEnd
			}
		}
	}
	return n - len(b), p.state == stDone, nil
}

// headerEnd returns the end of the header block in b, just past the first
// empty line, with or without its CR (as net/http reads them: "\n\r\n"
// or "\n\n"), looking from from on; -1 when b does not hold it yet.
func headerEnd(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		i += j
		switch {
		case i+1 < len(b) && b[i+1] == '\n':
			return i + 2
		case i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n':
			return i + 3
		}
	}
	return -1
}

// cutLine cuts b at its first LF, dropping the CR before it.
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		line = b
	} else {
		line, rest = b[:i], b[i+1:]
	}
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, rest
}

// chunkLine handles a complete line in the chunk-size, chunk-end or
// trailer state.
func (p *respParser) chunkLine(l []byte) error {
	switch p.state {
	case stChunkEnd:
		if len(l) != 0 {
			return fmt.Errorf("%w: chunk not followed by CRLF", ErrMalformed)
		}
		p.state = stChunkSize
	case stTrailer:
		if len(l) == 0 {
			p.state = stDone
		}
	case stChunkSize:
		if i := bytes.IndexAny(l, "; \t"); i >= 0 {
			l = l[:i] // chunk extensions
		}
		size, err := strconv.ParseInt(string(l), 16, 64)
		if err != nil || size < 0 || len(l) == 0 || len(l) > 16 {
			return fmt.Errorf("%w: bad chunk size %.20q", ErrMalformed, l)
		}
		if size == 0 {
			p.state = stTrailer
		} else {
			p.state, p.left = stChunkData, size
			p.chunk++
		}
	}
	return nil
}

// header parses the status line and headers (block ends with a blank line)
// and chooses how the body is delimited.
func (p *respParser) header(block []byte, h Handler) error {
	fh, _ := h.(FieldHandler)
	line, rest := cutLine(block)
	if !bytes.HasPrefix(line, []byte("HTTP/1.")) || len(line) < 12 || line[8] != ' ' {
		return fmt.Errorf("%w: status line %.40q", ErrMalformed, line)
	}
	http10 := line[7] == '0'
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil || status < 100 || status > 999 || (len(line) > 12 && line[12] != ' ') {
		return fmt.Errorf("%w: status line %.40q", ErrMalformed, line)
	}
	p.status = status
	length, chunked, closeConn, keepAlive := int64(-1), false, false, false
	for len(rest) > 0 {
		line, rest = cutLine(rest)
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return fmt.Errorf("%w: header line %.40q", ErrMalformed, line)
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		if fh != nil && p.status >= 200 {
			fh.Field(name, value)
		}
		// The lengths first: bytes.EqualFold costs more than the rest of
		// a line's parsing. A name of another length can match only by
		// Unicode folding, which among these names' letters only the
		// s of Transfer-Encoding has (ſ, two bytes).
		switch n := len(name); {
		case n == len("Content-Length") && bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 || (length >= 0 && n != length) {
				return fmt.Errorf("%w: Content-Length %.40q", ErrMalformed, value)
			}
			length = n
		case (n == len("Transfer-Encoding") || n == len("Transfer-Encoding")+1) && bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if http10 {
				// HTTP/1.0 has no transfer codings: net/http ignores the
				// field on a 1.0 response, and so does this parser (the
				// body runs to Content-Length or the close).
				break
			}
			if !bytes.EqualFold(value, []byte("chunked")) {
				return fmt.Errorf("%w: unsupported Transfer-Encoding %.40q", ErrMalformed, value)
			}
			chunked = true
		case n == len("Connection") && bytes.EqualFold(name, []byte("Connection")):
			for _, tok := range bytes.Split(value, []byte(",")) {
				tok = bytes.TrimSpace(tok)
				closeConn = closeConn || bytes.EqualFold(tok, []byte("close"))
				keepAlive = keepAlive || bytes.EqualFold(tok, []byte("keep-alive"))
			}
		}
	}
	p.keepAlive = !closeConn && (!http10 || keepAlive)
	switch {
	case status < 200:
		// An interim response has no body.
	case p.head || status == 204 || status == 304:
		p.state = stDone
	case chunked:
		p.state = stChunkSize
	case length == 0:
		p.state = stDone
	case length > 0:
		p.state, p.left = stLength, length
	default:
		p.state, p.keepAlive = stUntilClose, false
	}
	return nil
}

// eof is the end of the connection: it completes a body delimited by the
// close, and is an error anywhere else.
func (p *respParser) eof() error {
	switch p.state {
	case stDone, stUntilClose:
		p.state = stDone
		return nil
	case stHeader:
		if len(p.line) == 0 {
			return io.EOF // nothing of a response
		}
	}
	return io.ErrUnexpectedEOF
}
