package tokenizer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestCountContextStops: a count of 256 KB (about 0.1 s of work, ten
// times that with -race) gives up soon after its context ends, whatever
// the text (one word, many words), and counts as Count does when the
// context does not end.
func TestCountContextStops(t *testing.T) {
	vs := vocabularies(t)
	b := vs[0]
	for _, text := range []string{strings.Repeat("a", 256<<10), strings.Repeat("hello world ", 256<<10/12)} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(10*time.Millisecond, cancel)
		start := time.Now()
		_, err := b.CountContext(ctx, text)
		took := time.Since(start)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%.10q…: err %v after %v, want it cancelled", text, err, took)
		}
		// A whole count takes about 0.1 s; giving up must not wait for
		// it (the bound is loose for a busy machine).
		full := time.Now()
		n, err := CountContext(context.Background(), b, text)
		whole := time.Since(full)
		t.Logf("%.10q…: gave up after %v; a whole count takes %v", text, took, whole)
		if took > whole/2+200*time.Millisecond {
			t.Errorf("%.10q…: gave up after %v; a whole count takes %v", text, took, whole)
		}
		if short := text[:4096]; err != nil || n == 0 || b.Count(short) != must(CountContext(context.Background(), b, short)) {
			t.Errorf("%.10q…: CountContext %d, %v, or not Count's figure", text, n, err)
		}
	}
}

func must(n int, err error) int {
	if err != nil {
		return -1
	}
	return n
}
