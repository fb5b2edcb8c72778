package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

type stampedEvent struct {
	refEvent
	at time.Time
}

// pullEvents parses stream with Reader, reads split by sizes, each read
// stamped by a counting clock.
func pullEvents(stream, sizes []byte) ([]stampedEvent, error) {
	var clock int64
	now := func() time.Time { clock++; return time.Unix(0, clock) }
	rd := NewReader(&splitReader{data: stream, sizes: sizes}, 0, now)
	var out []stampedEvent
	var ev Event
	for {
		if err := rd.Next(&ev); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, stampedEvent{refEvent{string(ev.Name), string(ev.Data)}, ev.At})
	}
}

// pushEvents parses stream with Parser, fed in the same reads with the same
// stamps as pullEvents gives Reader (Reader's bufio asks for up to 32 KiB,
// so the reads are the same).
func pushEvents(stream, sizes []byte, maxLine int) ([]stampedEvent, error) {
	var p Parser
	p.Reset(maxLine)
	var out []stampedEvent
	fn := func(ev *Event) error {
		out = append(out, stampedEvent{refEvent{string(ev.Name), string(ev.Data)}, ev.At})
		return nil
	}
	src := &splitReader{data: stream, sizes: sizes}
	buf := make([]byte, 32<<10)
	var clock int64
	for {
		n, err := src.Read(buf)
		if n > 0 {
			clock++
			if err := p.Feed(buf[:n], time.Unix(0, clock), fn); err != nil {
				return out, err
			}
			// The batch is the caller's until the next read: nothing of it
			// may be kept past Feed.
			for i := range buf[:n] {
				buf[i] = 0xAA
			}
		}
		if err != nil {
			return out, p.End(time.Unix(0, clock), fn)
		}
	}
}

// FuzzParserMatchesReader checks the push parser against the pull Reader:
// the same events, with the same read stamps, however the bytes are split.
func FuzzParserMatchesReader(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n",
		"event: ping\ndata: a\ndata: b\n\n: comment\n\ndata:c\r\n\r\n",
		"data: no terminator",
		"data\n\nevent: x\n\ndata: y\r\n",
		"\r\n\r\n:only comments\n",
		"data: \xff\xfe\x00\n\n",
		"retry: 10\nid: 7\ndata: z\n\n",
		"data: a\r",
		// CR-only and mixed line ends; a CR at the end of a read whose
		// LF comes in the next.
		"data: a\r\rdata: b\r\r",
		"data: a\rdata: b\n\r\n\rdata: c\r\n\n",
		"event: e\r\ndata: 1\r\rdata: 2\n\n",
		"data: a\r\r\n\rdata: b\r",
	} {
		f.Add([]byte(s), []byte{0, 7, 63})
	}
	f.Add([]byte("data: "+strings.Repeat("x", 40<<10)+"\r\ndata: y\n\n"), []byte{63})
	f.Fuzz(func(t *testing.T, stream, sizes []byte) {
		want, werr := pullEvents(stream, sizes)
		got, gerr := pushEvents(stream, sizes, 0)
		if (werr != nil) != (gerr != nil) {
			t.Fatalf("Reader error %v, Parser error %v", werr, gerr)
		}
		if werr != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("Parser gave %d events, Reader %d", len(got), len(want))
		}
		// Reader's bufio asks for less than a split's size only when a
		// line nearly fills its 32 KiB buffer: the reads, and so the
		// stamps, are the same when no line is that long.
		short := true
		for _, l := range bytes.Split(stream, []byte("\n")) {
			short = short && len(l) < 16<<10
		}
		for i := range want {
			if !short {
				got[i].at, want[i].at = time.Time{}, time.Time{}
			}
			if got[i] != want[i] {
				t.Fatalf("event %d: Parser %d-byte %q at %v, Reader %d-byte %q at %v", i, len(got[i].data), got[i].name, got[i].at, len(want[i].data), want[i].name, want[i].at)
			}
		}
		if ref := reference(stream); len(ref) != len(got) {
			t.Fatalf("Parser gave %d events, reference %d", len(got), len(ref))
		}
	})
}

func TestParserLineBound(t *testing.T) {
	tests := []struct {
		name    string
		stream  string
		maxLine int
		wantErr bool
	}{
		{"fits", "data: abc\n\n", 16, false},
		{"too long in one read", "data: " + strings.Repeat("x", 100) + "\n\n", 16, true},
		{"too long across reads", "data: " + strings.Repeat("x", 100), 16, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pushEvents([]byte(tt.stream), []byte{9}, tt.maxLine)
			if got := errors.Is(err, ErrLineTooLong); got != tt.wantErr {
				t.Fatalf("error %v, want line-too-long %v", err, tt.wantErr)
			}
		})
	}
}

func TestParserCallbackError(t *testing.T) {
	var p Parser
	p.Reset(0)
	stop := errors.New("stop")
	n := 0
	err := p.Feed([]byte("data: a\n\ndata: b\n\n"), time.Unix(1, 0), func(*Event) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("err %v after %d events, want stop after 1", err, n)
	}
}

func BenchmarkParser(b *testing.B) {
	ev := []byte(`data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" the"}}]}` + "\n\n")
	var p Parser
	p.Reset(0)
	at := time.Now()
	fn := func(*Event) error { return nil }
	b.SetBytes(int64(len(ev)))
	for b.Loop() {
		if err := p.Feed(ev, at, fn); err != nil {
			b.Fatal(err)
		}
	}
}

// TestStray: the lines that are no SSE field (a JSON error body where a
// stream was due, or after its events) are kept, bounded, by Reader and
// Parser alike, whatever the reads; fields, comments and blank lines are
// not.
func TestStray(t *testing.T) {
	long := strings.Repeat("x", 3*MaxStray)
	for _, tc := range []struct{ stream, want string }{
		{"data: a\n\nid: 1\nretry: 5\n: comment\nevent: e\ndata\n\n", ""},
		{`{"error":{"message":"boom"}}`, `{"error":{"message":"boom"}}`},
		{"{\r\n  \"object\": \"error\",\r\n  \"message\": \"m\"\r\n}\r\n", "{\n  \"object\": \"error\",\n  \"message\": \"m\"\n}"},
		{"data: a\n\n{\"error\":\"late\"}\n", `{"error":"late"}`},
		{"<html>\n" + long + "\n", ("<html>\n" + long)[:MaxStray]},
	} {
		for _, sizes := range [][]byte{{63}, {0, 5, 2}} {
			rd := NewReader(&splitReader{data: []byte(tc.stream), sizes: sizes}, 0, nil)
			var ev Event
			for rd.Next(&ev) == nil {
			}
			var p Parser
			p.Reset(0)
			src := &splitReader{data: []byte(tc.stream), sizes: sizes}
			buf := make([]byte, 64)
			for {
				n, err := src.Read(buf)
				if ferr := p.Feed(buf[:n], time.Time{}, func(*Event) error { return nil }); ferr != nil {
					t.Fatal(ferr)
				}
				if err != nil {
					break
				}
			}
			if err := p.End(time.Time{}, func(*Event) error { return nil }); err != nil {
				t.Fatal(err)
			}
			if string(rd.Stray()) != tc.want || string(p.Stray()) != tc.want {
				t.Errorf("%.40q in reads %v: Reader kept %.60q, Parser %.60q, want %.60q", tc.stream, sizes, rd.Stray(), p.Stray(), tc.want)
			}
		}
	}
}
