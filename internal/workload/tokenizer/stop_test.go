package tokenizer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/longtest"
)

// stopTexts are a count's two ways to take long: one long word (the heap
// merge looks at its stop channel) and many short words (the piece loop
// looks), of size bytes each.
func stopTexts(size int) []string {
	return []string{strings.Repeat("a", size), strings.Repeat("hello world ", size/12)}
}

// TestCountStopsPartWay: a count whose stop channel is closed gives up at
// its next look (every stopEvery steps) instead of counting on, whatever
// the text; CountContext gives up on an ended context and counts as Count
// does on a live one. Untimed: TestCountContextStops times the same on a
// real cancel.
func TestCountStopsPartWay(t *testing.T) {
	b := vocabularies(t)[0]
	closed := make(chan struct{})
	close(closed)
	for _, text := range stopTexts(64 << 10) {
		if n, ok := b.count(text, closed); ok {
			t.Errorf("%.10q…: counted all of it (%d tokens) after it was told to stop", text, n)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := b.CountContext(ctx, text); !errors.Is(err, context.Canceled) {
			t.Errorf("%.10q…: err %v on an ended context, want it cancelled", text, err)
		}
		n, err := CountContext(context.Background(), b, text)
		if want := b.Count(text); err != nil || n != want {
			t.Errorf("%.10q…: CountContext %d, %v; Count %d", text, n, err, want)
		}
	}
}

// TestCountContextStops: a count of 256 KB (about 0.1 s of work, ten
// times that with -race) gives up soon after its context ends, whatever
// the text (one word, many words), and counts as Count does when the
// context does not end. It needs seconds of counting under -race to tell
// giving up from finishing on a busy machine, so it runs with -tags
// integration; TestCountStopsPartWay checks the same without a clock.
func TestCountContextStops(t *testing.T) {
	longtest.Skip(t)
	vs := vocabularies(t)
	b := vs[0]
	for _, text := range stopTexts(256 << 10) {
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
