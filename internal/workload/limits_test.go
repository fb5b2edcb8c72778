package workload

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReadChunks(t *testing.T) {
	long := bytes.Repeat([]byte("0123456789abcdef"), 3*chunk/16+5) // three chunks and a bit
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"small", []byte("hello")},
		{"the first chunk exactly", bytes.Repeat([]byte("x"), 64<<10)},
		{"a chunk exactly", bytes.Repeat([]byte("y"), chunk)},
		{"chunks", long},
	} {
		for _, r := range []io.Reader{bytes.NewReader(tc.in), iotest.HalfReader(bytes.NewReader(tc.in))} {
			b, err := readChunks(r)
			if err != nil || !bytes.Equal(b, tc.in) {
				t.Errorf("%s: %d bytes, %v; want %d", tc.name, len(b), err, len(tc.in))
			}
		}
	}
	boom := errors.New("boom")
	if _, err := readChunks(io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom))); !errors.Is(err, boom) {
		t.Errorf("a failing read: %v", err)
	}
}
