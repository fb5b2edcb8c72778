package sse

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func readAll(t *testing.T, r io.Reader, maxLine int) ([]string, error) {
	t.Helper()
	rd := NewReader(r, maxLine, nil)
	var out []string
	var ev Event
	for {
		err := rd.Next(&ev)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		s := string(ev.Data)
		if len(ev.Name) > 0 {
			s = string(ev.Name) + ":" + s
		}
		out = append(out, s)
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"single", "data: hello\n\n", []string{"hello"}},
		{"no space", "data:hello\n\n", []string{"hello"}},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"a", "b"}},
		{"cr", "data: a\r\rdata: b\r\r", []string{"a", "b"}},
		{"cr then lf is one line end", "data: a\r\n\rdata: b\n\r\n", []string{"a", "b"}},
		{"mixed", "event: e\r\ndata: 1\rdata: 2\n\r\rdata: 3\r\n\n", []string{"e:1\n2", "3"}},
		{"cr ends the last line", "data: a\r", []string{"a"}},
		{"multi-line", "data: a\ndata: b\n\n", []string{"a\nb"}},
		{"comment and blank", ": ping\n\n\ndata: x\n\n", []string{"x"}},
		{"event name", "event: error\ndata: {}\n\n", []string{"error:{}"}},
		{"name reset", "event: e\ndata: 1\n\ndata: 2\n\n", []string{"e:1", "2"}},
		{"no final blank", "data: a\n\ndata: tail", []string{"a", "tail"}},
		{"id and retry ignored", "id: 1\nretry: 5\ndata: v\n\n", []string{"v"}},
		{"empty data", "data:\n\n", []string{""}},
		{"only comments", ": a\n: b\n", nil},
		{"openai stream", "data: {\"x\":1}\n\ndata: [DONE]\n\n", []string{`{"x":1}`, "[DONE]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(t, strings.NewReader(tc.in), 0)
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLongLines(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // longer than the bufio buffer
	got, err := readAll(t, strings.NewReader("data: "+long+"\n\ndata: y\n\n"), 1<<20)
	if err != nil || len(got) != 2 || got[0] != long || got[1] != "y" {
		t.Fatalf("long line within bound: err=%v n=%d", err, len(got))
	}
	huge := strings.Repeat("x", 10<<20)
	_, err = readAll(t, strings.NewReader("data: "+huge+"\n\n"), 1<<20)
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("10 MB line: err = %v, want ErrLineTooLong", err)
	}
}

// chunkReader returns its chunks one Read at a time, advancing a fake clock.
type chunkReader struct {
	chunks []string
	clock  *time.Time
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	*c.clock = c.clock.Add(10 * time.Millisecond)
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	if c.chunks[0] == "" {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

func TestTimestampIsReadThatCompletedEvent(t *testing.T) {
	base := time.Unix(1000, 0)
	clock := base
	src := &chunkReader{clock: &clock, chunks: []string{
		"data: a\n\ndata: b\n\n", // two events in one read: same time
		"data: c",                // split event: completed by the next read
		"\n\n",
	}}
	rd := NewReader(src, 0, func() time.Time { return clock })
	var ev Event
	var at []time.Duration
	for rd.Next(&ev) == nil {
		at = append(at, ev.At.Sub(base))
	}
	want := []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond}
	if len(at) != len(want) {
		t.Fatalf("events at %v, want %v", at, want)
	}
	for i := range want {
		if at[i] != want[i] {
			t.Fatalf("events at %v, want %v", at, want)
		}
	}
}

// TestCRLineEndNotDelayed: an event whose blank line ends with a CR that
// is the last byte of a read is dispatched with that read's stamp, without
// waiting for a possible LF, and an LF that then starts the next read is
// part of that line end, not a blank line of its own.
func TestCRLineEndNotDelayed(t *testing.T) {
	base := time.Unix(1000, 0)
	clock := base
	src := &chunkReader{clock: &clock, chunks: []string{
		"data: a\r\r",   // complete at its CR: at 10 ms
		"\ndata: b\r",   // the LF of the CR before
		"\rdata: c\r\n", // b completed at 30 ms
		"\r\n",          // c at 40 ms
	}}
	rd := NewReader(src, 0, func() time.Time { return clock })
	var ev Event
	var got []string
	for rd.Next(&ev) == nil {
		got = append(got, fmt.Sprintf("%s@%v", ev.Data, ev.At.Sub(base)))
	}
	if want := "a@10ms b@30ms c@40ms"; strings.Join(got, " ") != want {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func FuzzReader(f *testing.F) {
	f.Add("data: a\n\n", 64)
	f.Add("event: x\ndata: 1\ndata: 2\r\n\r\n: c\n", 8)
	f.Add("data", 1)
	f.Fuzz(func(t *testing.T, in string, maxLine int) {
		if maxLine > 1<<16 {
			maxLine = 1 << 16
		}
		rd := NewReader(strings.NewReader(in), maxLine, nil)
		var ev Event
		for i := 0; i <= len(in)+1; i++ {
			if err := rd.Next(&ev); err != nil {
				return
			}
			if len(ev.Data) > len(in) {
				t.Fatalf("data longer than input")
			}
		}
		t.Fatalf("more events than input bytes")
	})
}

func BenchmarkNext(b *testing.B) {
	payload := `{"id":"cmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" the"},"finish_reason":null}]}`
	one := "data: " + payload + "\n\n"
	stream := strings.Repeat(one, 1024)
	sr := strings.NewReader(stream)
	rd := NewReader(sr, 0, nil)
	var ev Event
	b.ReportAllocs()
	b.SetBytes(int64(len(one)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := rd.Next(&ev); err != nil {
			sr.Reset(stream)
			rd.Reset(sr, 0, nil)
			if err := rd.Next(&ev); err != nil {
				b.Fatal(err)
			}
		}
	}
}
