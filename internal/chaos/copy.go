package chaos

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyFlush copies body to w, flushing after every read so nothing waits
// in the proxy.
func copyFlush(w io.Writer, fl http.Flusher, body io.Reader) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err != nil {
			if err != io.EOF {
				// The upstream broke mid-response: pass the break on.
				panic(http.ErrAbortHandler)
			}
			return
		}
	}
}

// faultCopier copies a response with stream faults: a bandwidth limit,
// and for SSE, stalls, truncation and slow drip by event.
type faultCopier struct {
	p     *Proxy
	w     io.Writer
	fl    http.Flusher
	d     *decision
	ctx   context.Context
	start time.Time
	sent  int64 // bytes written, for the bandwidth limit
}

// write writes b within the bandwidth limit and flushes.
func (c *faultCopier) write(b []byte) bool {
	if c.start.IsZero() {
		c.start = time.Now()
	}
	for len(b) > 0 {
		n := len(b)
		if bw := c.d.bandwidth; bw > 0 {
			// Pieces of a tenth of a second's worth keep the rate smooth.
			n = min(n, max(int(bw/10), 1))
			due := c.start.Add(time.Duration(float64(c.sent+int64(n)) / float64(bw) * float64(time.Second)))
			if wait := time.Until(due); wait > 0 && !c.p.sleep(c.ctx, wait) {
				return false
			}
		}
		if _, err := c.w.Write(b[:n]); err != nil {
			return false
		}
		if c.fl != nil {
			c.fl.Flush()
		}
		c.sent += int64(n)
		b = b[n:]
	}
	return true
}

// bytes copies the body with the bandwidth limit only.
func (c *faultCopier) bytes(body io.Reader) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		n, err := body.Read(buf)
		if n > 0 && !c.write(buf[:n]) {
			return
		}
		if err != nil {
			if err != io.EOF {
				panic(http.ErrAbortHandler)
			}
			return
		}
	}
}

// events copies an SSE body event by event (an event ends with a blank
// line), applying the stall, truncation and drip to events in order: the
// first N events pass, then the stream stalls or is cut.
func (c *faultCopier) events(body io.Reader) {
	if c.d.drip > 0 {
		c.p.inj[KindDrip].Add(1)
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var pending []byte
	n := 0 // events written
	emit := func(ev []byte) bool {
		if n == c.d.truncAfter {
			c.p.inj[KindTruncate].Add(1)
			panic(http.ErrAbortHandler)
		}
		if n == c.d.stallAfter {
			c.p.inj[KindStall].Add(1)
			if !c.p.sleep(c.ctx, c.d.stall) {
				return false
			}
		}
		if c.d.drip > 0 && !c.p.sleep(c.ctx, c.d.drip) {
			return false
		}
		n++
		return c.write(ev)
	}
	for {
		m, err := body.Read(buf)
		pending = append(pending, buf[:m]...)
		for {
			end := eventEnd(pending)
			if end < 0 {
				break
			}
			if !emit(pending[:end]) {
				return
			}
			pending = pending[end:]
		}
		if err != nil {
			if err != io.EOF {
				panic(http.ErrAbortHandler)
			}
			if len(pending) > 0 {
				c.write(pending)
			}
			return
		}
	}
}

// eventEnd returns the length of the first complete event in b (through
// its blank line, LF or CRLF), or -1.
func eventEnd(b []byte) int {
	lf := bytes.Index(b, []byte("\n\n"))
	crlf := bytes.Index(b, []byte("\r\n\r\n"))
	switch {
	case lf < 0 && crlf < 0:
		return -1
	case crlf < 0 || (lf >= 0 && lf < crlf):
		return lf + 2
	}
	return crlf + 4
}
