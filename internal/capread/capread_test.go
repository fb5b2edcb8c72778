package capread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReader(t *testing.T) {
	ctx := context.Background()
	b, err := io.ReadAll(Reader(ctx, strings.NewReader("12345"), 5, "f", "fileSize"))
	if err != nil || string(b) != "12345" {
		t.Fatalf("a file of exactly the limit: %q, %v", b, err)
	}
	_, err = io.ReadAll(Reader(ctx, strings.NewReader("123456"), 5, "f", "fileSize"))
	var le *LimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "f is over the fileSize limit of 5 bytes: raise it with --limit fileSize=SIZE") {
		t.Fatalf("over the limit: %v", err)
	}
	if b, err := io.ReadAll(Reader(ctx, strings.NewReader("123456"), 0, "f", "k")); err != nil || len(b) != 6 {
		t.Fatalf("no limit: %q %v", b, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := io.ReadAll(Reader(cctx, strings.NewReader("123"), 0, "f", "k")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// TestEndlessFile reads /dev/zero, a file that never ends: the read stops
// at the limit.
func TestEndlessFile(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := ReadFile(context.Background(), "/dev/zero", 1<<20, "fileSize")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("err %v", err)
	}
	p := filepath.Join(t.TempDir(), "x")
	os.WriteFile(p, []byte("abc"), 0o644)
	if b, err := ReadFile(context.Background(), p, 3, "fileSize"); err != nil || string(b) != "abc" {
		t.Fatalf("%q %v", b, err)
	}
	// A regular file over the limit is refused from its size, unread.
	if _, err := ReadFile(context.Background(), p, 2, ""); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "2 bytes") {
		t.Fatalf("err %v", err)
	}
}

func TestLines(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		o        LineOptions
		line     int // 0: no error
	}{
		{"short lines", "1234\n12345\n\n123\n", LineOptions{}, 0},
		{"a line of the limit without its end", "12345", LineOptions{}, 0},
		{"a long line", "1\n2\n123456\n1\n", LineOptions{}, 3},
		{"a long last line", "1\n2\n123456", LineOptions{}, 3},
		{"no line ends", strings.Repeat("x", 100), LineOptions{}, 1},
		{"a CR before the line end counts", "12345\r\n", LineOptions{}, 1},
		{"csv: line ends in quotes join lines", "a\n\"1\n2\n3\"\nb\n", LineOptions{CSV: true}, 2},
		{"csv: short quoted lines", "a\n\"1\n2\"\nb\n", LineOptions{CSV: true}, 0},
		{"csv: doubled quotes are a quote", "a\n\"\"\"\"\n\"1\"\"\"\n", LineOptions{CSV: true}, 0},
		{"csv: a quote never closed", "a\n\"1\n2\n3\n4\n", LineOptions{CSV: true}, 2},
		{"lines without CSV", "a\n\"1\n2\n3\"\nb\n", LineOptions{}, 0},
		{"a JSON array is not lines", "  \n[" + strings.Repeat("x", 100) + "]", LineOptions{UnlessArray: true}, 0},
		{"lines unless an array", " {" + strings.Repeat("x", 100) + "}", LineOptions{UnlessArray: true}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Name, o.Key = "f", "lineSize"
			// One byte a read, and all at once.
			for _, r := range []io.Reader{iotest.OneByteReader(strings.NewReader(tc.in)), strings.NewReader(tc.in)} {
				b, err := io.ReadAll(Lines(r, 5, o))
				var le *LineError
				switch {
				case tc.line == 0 && (err != nil || string(b) != tc.in):
					t.Fatalf("%q, %v", b, err)
				case tc.line != 0 && (!errors.As(err, &le) || le.Line != tc.line || !errors.Is(err, ErrTooLarge)):
					t.Fatalf("error %v, want one at line %d", err, tc.line)
				case tc.line != 0 && !strings.Contains(err.Error(), fmt.Sprintf("f, line %d: the line is over the lineSize limit of 5 bytes: raise it with --limit lineSize=SIZE", tc.line)):
					t.Fatalf("error %v", err)
				}
			}
		})
	}
	if b, err := io.ReadAll(Lines(strings.NewReader(strings.Repeat("x", 100)), 0, LineOptions{})); err != nil || len(b) != 100 {
		t.Fatalf("no limit: %v", err)
	}
}
