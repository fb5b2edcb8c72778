package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	tiktoken "github.com/pkoukk/tiktoken-go"

	"github.com/spate-dev/spate/internal/longtest"
)

// reference is tiktoken-go's encoder over the same vocabulary and
// pattern: the counts Count must equal. Each vocabulary's is built once
// for the package's tests (a fifth of a second each under -race).
func reference(t testing.TB, b *BPE) *tiktoken.Tiktoken {
	t.Helper()
	references.Lock()
	defer references.Unlock()
	if ref, ok := references.m[b]; ok {
		return ref
	}
	core, err := tiktoken.NewCoreBPE(b.ranks, map[string]int{}, b.pattern)
	if err != nil {
		t.Fatal(err)
	}
	ref := tiktoken.NewTiktoken(core, &tiktoken.Encoding{Name: b.name, PatStr: b.pattern, MergeableRanks: b.ranks}, nil)
	references.m[b] = ref
	return ref
}

var references = struct {
	sync.Mutex
	m map[*BPE]*tiktoken.Tiktoken
}{m: map[*BPE]*tiktoken.Tiktoken{}}

func vocabularies(t testing.TB) []*BPE {
	t.Helper()
	var out []*BPE
	for _, name := range []string{"cl100k_base", "o200k_base", "llama3"} {
		b, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// randomText draws text from pieces that make long runs, rare merges and
// multi-byte runes likely.
func randomText(r *rand.Rand, n int) string {
	units := []string{"a", "b", "ab", "the", " ", "  ", "\n", "\r\n", "1", "23", "!", "?!", "é", "日本", "🎉", "'s", "\t", "\xff", "Z", "ﬁ"}
	var sb strings.Builder
	for sb.Len() < n {
		u := units[r.IntN(len(units))]
		for k := r.IntN(200) + 1; k > 0 && sb.Len() < n; k-- {
			sb.WriteString(u)
		}
	}
	return sb.String()
}

func TestCountMatchesTiktoken(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	// Runs of one unit are long pieces, which the heap merges. The
	// reference merges them in quadratic time (5000 "a" took 0.1 s a
	// vocabulary under -race), so the default suite has them at a third
	// of their length, still far past smallPiece; -tags integration at
	// full length.
	long := func(n int) int {
		if longtest.On {
			return n
		}
		return n / 3
	}
	texts := []string{
		"", "a", "hello world", strings.Repeat("a", long(5000)), strings.Repeat(" ", long(3000)) + "x",
		strings.Repeat("!", long(2000)), strings.Repeat("é", long(1500)), strings.Repeat("ab", long(1200)),
		strings.Repeat("\n ", long(1000)), strings.Repeat("A", long(4000)), "<|endoftext|> is text",
		"invalid \xff\xfe utf-8 \xc3", strings.Repeat("0123456789", long(300)),
	}
	for i := 0; i < 40; i++ {
		texts = append(texts, randomText(r, 50+r.IntN(3000)))
	}
	for _, b := range vocabularies(t) {
		ref := reference(t, b)
		for i, text := range texts {
			if got, want := b.Count(text), len(ref.EncodeOrdinary(text)); got != want {
				t.Errorf("%s, text %d (%d bytes, %.40q…): %d tokens, tiktoken-go %d", b.name, i, len(text), text, got, want)
			}
		}
	}
}

// TestMergeHeapMatchesScan merges long pieces both ways: the heap must
// choose the same merges as the rescanning rule.
func TestMergeHeapMatchesScan(t *testing.T) {
	tok, err := CL100K()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	alphabets := []string{"a", "ab", "abc", "ae io", "xyz xy", "th", "\xe6\x97\xa5\xe6\x9c\xac"}
	s := new(scratch)
	for i := 0; i < 300; i++ {
		a := alphabets[r.IntN(len(alphabets))]
		p := make([]byte, 2+r.IntN(600))
		for j := range p {
			p[j] = a[r.IntN(len(a))]
		}
		got, _ := tok.mergeHeap(p, s)
		if want := tok.mergeScan(p, s); got != want {
			t.Fatalf("piece %q: heap %d tokens, scan %d", p, got, want)
		}
	}
}

// TestCountIsNotQuadratic: counting 4× the text may take about 4× the
// time (n log n) but not 16× (quadratic, as the count once was: 50k chars
// 0.9 s, 200k 27 s). Relative, not timed: each size is timed as the
// fastest of 3 counts, in the counting thread's CPU time (on Linux), the
// sizes taking turns, so a busy machine's load does not decide; 1 MiB
// runs whole in the benchmark.
//
// One word of 8 KiB against one of 32 KiB tells them apart: under -race
// the heap merge took ×3.5 to ×5.0, the rescanning merge forced onto
// every piece ×17.5 ("a") and ×17.9 (" ") on cl100k_base (×11.2 for "A"
// on o200k_base, whose row runs with -tags integration, at 16 and 64 KiB).
func TestCountIsNotQuadratic(t *testing.T) {
	vs := vocabularies(t)
	// fastest times the counts of two texts in turns and returns the
	// fastest of 3 for each.
	//
	// A thread's CPU time is counted in scheduler ticks (1 to 10 ms), so
	// a count that takes under a tick may read 0 and the next a whole
	// tick (under three suites: 0 s against 7.9 ms, "×7922"): each time
	// is of as many counts in a row as make the first text's take at
	// least 30 ms, divided by their number.
	fastest := func(t *testing.T, b *BPE, texts ...string) []time.Duration {
		reps := 1
		for threadCPU(func() {
			for range reps {
				if b.Count(texts[0]) == 0 {
					t.Fatalf("%s: 0 tokens", b.name)
				}
			}
		}) < 30*time.Millisecond && reps < 1<<12 {
			reps *= 2
		}
		best := make([]time.Duration, len(texts))
		for i := range best {
			best[i] = time.Duration(1<<63 - 1)
		}
		for range 3 {
			for i, text := range texts {
				took := threadCPU(func() {
					for range reps {
						b.Count(text)
					}
				})
				best[i] = min(best[i], took/time.Duration(reps))
			}
		}
		return best
	}
	for _, c := range []struct {
		b    *BPE
		unit string
		size int // the small word's bytes; the large is 4×
		long bool
	}{{vs[0], "a", 8 << 10, false}, {vs[0], " ", 8 << 10, false}, {vs[1], "A", 16 << 10, true}} {
		t.Run(fmt.Sprintf("%s/%q", c.b.name, c.unit), func(t *testing.T) {
			if c.long {
				longtest.Skip(t)
			}
			took := fastest(t, c.b, strings.Repeat(c.unit, c.size), strings.Repeat(c.unit, 4*c.size))
			small, large := took[0], took[1]
			ratio := float64(large) / float64(max(small, time.Microsecond))
			t.Logf("%q× %d KiB %v, %d KiB %v: ×%.1f", c.unit, c.size>>10, small, 4*c.size>>10, large, ratio)
			if ratio > 10 {
				t.Errorf("counting 4× the text of %q took ×%.1f the time (quadratic is ×16)", c.unit, ratio)
			}
		})
	}
}

func BenchmarkCountLongRun(b *testing.B) {
	tok, err := CL100K()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{50_000, 200_000, 1_000_000} {
		text := strings.Repeat("a", n)
		b.Run(fmt.Sprintf("a×%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for i := 0; i < b.N; i++ {
				tok.Count(text)
			}
		})
	}
}

func FuzzCount(f *testing.F) {
	f.Add("hello world")
	f.Add(strings.Repeat("a", 300))
	f.Add("  \n\n x!? 123456 é 🎉")
	tok, err := CL100K()
	if err != nil {
		f.Fatal(err)
	}
	ref := reference(f, tok)
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			text = text[:4096] // the reference is quadratic
		}
		if got, want := tok.Count(text), len(ref.EncodeOrdinary(text)); got != want {
			t.Fatalf("%q: %d tokens, tiktoken-go %d", text, got, want)
		}
	})
}

// FuzzParseHF reads tokenizer.json files as a user may hand one: no input
// makes it panic, and a tokenizer it accepts counts any text.
func FuzzParseHF(f *testing.F) {
	f.Add([]byte(`{"pre_tokenizer":{"type":"Split","pattern":{"Regex":" ?\\p{L}+|\\s+"}},"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"Ġ":3}}}`), "ab ba")
	f.Add([]byte(`{"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"("}}]},"model":{"type":"BPE","vocab":{"a":0}}}`), "a")
	f.Add([]byte(`{"model":{"type":"WordPiece"}}`), "")
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		b, err := parseHF(data, "f.json")
		if err != nil {
			return
		}
		if len(text) > 256 {
			text = text[:256]
		}
		if n := b.Count(text); n < 0 || n > 4*len(text)+4 {
			t.Fatalf("%q: %d tokens", text, n)
		}
	})
}
