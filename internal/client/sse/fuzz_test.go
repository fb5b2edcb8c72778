package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// splitReader returns its data in reads of varying sizes (1 to 64 bytes,
// from sizes in turn), as a network does.
type splitReader struct {
	data  []byte
	sizes []byte
	i     int
}

func (c *splitReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(c.sizes) > 0 {
		n = int(c.sizes[c.i%len(c.sizes)]%64) + 1
		c.i++
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

type refEvent struct{ name, data string }

// reference parses a whole stream the simple way: split into lines at
// every CRLF, LF or CR (the SSE specification's line ends), then apply the
// SSE field rules. It is what Reader must agree with, whatever the read
// sizes.
func reference(stream []byte) []refEvent {
	norm := bytes.ReplaceAll(stream, []byte("\r\n"), []byte("\n"))
	norm = bytes.ReplaceAll(norm, []byte("\r"), []byte("\n"))
	lines := bytes.Split(norm, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1] // the terminator of the last line, not a line
	}
	var out []refEvent
	var name, data []byte
	has := false
	for _, l := range lines {
		if len(l) == 0 {
			if has {
				out = append(out, refEvent{string(name), string(data)})
			}
			name, data, has = nil, nil, false
			continue
		}
		if l[0] == ':' {
			continue
		}
		field, value := l, []byte(nil)
		if i := bytes.IndexByte(l, ':'); i >= 0 {
			field, value = l[:i], bytes.TrimPrefix(l[i+1:], []byte(" "))
		}
		switch string(field) {
		case "data":
			if has {
				data = append(data, '\n')
			}
			data = append(data, value...)
			has = true
		case "event":
			name = append(name[:0], value...)
		}
	}
	if has {
		out = append(out, refEvent{string(name), string(data)})
	}
	return out
}

// FuzzReaderMatchesReference checks the SSE reader on hostile streams: it
// must not panic or loop, must end with io.EOF or a line-length error, and
// must parse exactly what the reference parser does, however the bytes are
// split into reads. Each event carries the time of the read that completed
// it.
func FuzzReaderMatchesReference(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
		"event: ping\ndata: a\ndata: b\n\n: comment\n\ndata:c\r\n\r\n",
		"data: no terminator",
		"data\n\nevent: x\n\ndata: y\r\n",
		"\r\n\r\n:only comments\n",
		"data: \xff\xfe\x00\n\n",
		"retry: 10\nid: 7\ndata: z\n\n",
		// CR-only and mixed line ends, which the specification allows.
		"data: a\r\rdata: b\r\r",
		"data: a\rdata: b\n\r\n\rdata: c\r\n\n",
		"event: e\r\ndata: 1\r\rdata: 2\n\n",
		"data: a\r\r\n\rdata: b\r",
	} {
		f.Add([]byte(s), []byte{0, 7, 63})
	}
	// A line longer than the reader's 32 KiB buffer takes its other path.
	f.Add([]byte("data: "+strings.Repeat("x", 40<<10)+"\r\ndata: y\n\n"), []byte{63})
	f.Add([]byte("data: "+strings.Repeat("x", 40<<10)+"\rdata: y\r\r"), []byte{63})
	f.Fuzz(func(t *testing.T, stream, sizes []byte) {
		var clock int64
		now := func() time.Time { clock++; return time.Unix(0, clock) }
		rd := NewReader(&splitReader{data: stream, sizes: sizes}, 0, now)
		want := reference(stream)
		var ev Event
		var got []refEvent
		for range len(stream) + 2 {
			err := rd.Next(&ev)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrLineTooLong) {
					t.Fatalf("unexpected error %v", err)
				}
				if errors.Is(err, io.EOF) && len(got) != len(want) {
					t.Fatalf("%d events before EOF, reference %d", len(got), len(want))
				}
				return
			}
			if ev.At.IsZero() || ev.At.UnixNano() > clock {
				t.Fatalf("event At %v, clock at %d", ev.At, clock)
			}
			got = append(got, refEvent{string(ev.Name), string(ev.Data)})
			if i := len(got) - 1; i >= len(want) || got[i] != want[i] {
				t.Fatalf("event %d = %+v, reference %+v", i, got[i], want)
			}
		}
		t.Fatalf("no end after %d events from %d bytes", len(got), len(stream))
	})
}
