package capread

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
