package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/workload/tokenizer"
)

func writeTrace(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// commonPrefix is the number of leading tokens a and b share.
func commonPrefix(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestMooncakeSharedBlocks is issue 21's trace prefix test: in the chosen
// tokenizer, every prompt is exactly input_length tokens, and two prompts
// that share their first k hash ids share exactly k × block tokens of
// prefix: the same tokens up to there, a different one right after.
func TestMooncakeSharedBlocks(t *testing.T) {
	for _, block := range []int{16, 512} {
		path := writeTrace(t,
			fmt.Sprintf(`{"timestamp": 0, "input_length": %d, "output_length": 8, "hash_ids": [0, 1, 2, 7]}`, 4*block),
			fmt.Sprintf(`{"timestamp": 10, "input_length": %d, "output_length": 8, "hash_ids": [0, 1, 2, 9]}`, 4*block),
			fmt.Sprintf(`{"timestamp": 20, "input_length": %d, "output_length": 8, "hash_ids": [0, 1, 3, 10]}`, 3*block+5),
			fmt.Sprintf(`{"timestamp": 30, "input_length": %d, "output_length": 8, "hash_ids": [4, 11]}`, block+1),
			fmt.Sprintf(`{"timestamp": 40, "input_length": %d, "output_length": 8, "hash_ids": [0, 1, 3, 10, 12]}`, 4*block+3),
			`{"timestamp": 50, "input_length": 7, "output_length": 8}`,
		)
		for _, name := range []string{"cl100k_base", "o200k_base", "llama3"} {
			tok, err := tokenizer.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			d, err := LoadFormat(path, LoadOptions{Tokenizer: tok, BlockSize: block, Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			var ids [][]int
			lengths := []int{4 * block, 4 * block, 3*block + 5, block + 1, 4*block + 3, 7}
			for i := range d.reqs {
				r := d.reqs[i]
				ids = append(ids, tok.Encode(r.Prompt))
				if len(ids[i]) != lengths[i] || r.InputTokens != lengths[i] {
					t.Errorf("%s, block %d, row %d: %d tokens (InputTokens %d), want input_length %d", name, block, i, len(ids[i]), r.InputTokens, lengths[i])
				}
				if r.MaxTokens != 8 {
					t.Errorf("row %d: max_tokens %d, want output_length 8", i, r.MaxTokens)
				}
			}
			for _, c := range []struct{ a, b, shared int }{
				{0, 1, 3 * block},   // [0 1 2 7] and [0 1 2 9]
				{0, 2, 2 * block},   // [0 1 2 …] and [0 1 3 …]
				{2, 4, 3*block + 5}, // [0 1 3 10(partial)] is a prefix of [0 1 3 10 12]
				{0, 3, 0},
				{3, 5, 0},
			} {
				if got := commonPrefix(ids[c.a], ids[c.b]); got != c.shared {
					t.Errorf("%s, block %d: rows %d and %d share %d tokens of prefix, want %d", name, block, c.a, c.b, got, c.shared)
				}
			}
		}
	}
}

func TestMooncakeSessionsAndOffsets(t *testing.T) {
	path := writeTrace(t,
		`{"session_id": "a", "timestamp": 100, "input_length": 32, "output_length": 4, "hash_ids": [1, 2]}`,
		`{"timestamp": 150, "input_length": 16, "output_length": 3, "hash_ids": [5]}`,
		`{"session_id": "a", "delay": 2000, "input_length": 16, "output_length": 5, "hash_ids": [3]}`,
		`{"session_id": 7, "timestamp": 400, "input_length": 10, "output_length": 2}`,
		`{"session_id": "a", "delay": 0.5, "text_input": "and then?", "output_length": 6}`,
	)
	d, err := LoadFormat(path, LoadOptions{BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 3 {
		t.Fatalf("%d requests, want 3 (session a, a single row, session 7)", d.Len())
	}
	a := d.reqs[0]
	if len(a.Turns) != 3 || a.Session != "spate-a" || a.Prompt != "" {
		t.Fatalf("session a: %+v", a)
	}
	if a.Turns[0].Think != 0 || a.Turns[1].Think != 2*time.Second || a.Turns[2].Think != 500*time.Microsecond {
		t.Errorf("think times %v %v %v, want 0, 2s, 0.5ms", a.Turns[0].Think, a.Turns[1].Think, a.Turns[2].Think)
	}
	if a.Turns[0].MaxTokens != 4 || a.Turns[1].MaxTokens != 5 || a.Turns[2].Prompt != "and then?" || a.Turns[1].InputTokens != 16 {
		t.Errorf("turns %+v", a.Turns)
	}
	offs, timed, err := d.Offsets()
	if err != nil || !timed || len(offs) != 3 || offs[0] != 0 || offs[1] != 50*time.Millisecond || offs[2] != 300*time.Millisecond {
		t.Errorf("offsets %v (timed %v, %v), want 0, 50ms, 300ms", offs, timed, err)
	}
	if Detect(path, []byte(`{"input_length": 5}`)) != FormatMooncake || Detect(path, []byte(`{"hash_ids": [1]}`)) != FormatMooncake {
		t.Error("a Mooncake trace is not detected")
	}
}

func TestMooncakeErrors(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`{"input_length": 1000, "hash_ids": [1]}`, "1 hash_ids for input_length 1000, but blocks of 512 tokens need ceil(1000/512) = 2"},
		{`{"input_length": 0}`, "input_length must be a number of tokens >= 1"},
		{`{"input_length": 5, "chat_id": 3}`, `unknown field "chat_id"`},
		{`{"input_length": 5, "delay": 3}`, "give session_id too"},
		{`{"input_length": 5, "timestamp": -1}`, "timestamp must be"},
		{`{"text_input": "x", "input_length": 5}`, "text_input excludes"},
		{`{"input_length": 5, "hash_ids": [-2]}`, "hash id -2"},
		{`{"input_length": 5, "session_id": [1]}`, "session_id must be"},
	} {
		path := writeTrace(t, `{"session_id": "s", "input_length": 5, "timestamp": 0}`, c.line, `{"session_id": "s", "input_length": 5, "timestamp": 9}`)
		_, err := LoadFormat(path, LoadOptions{Format: FormatMooncake})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%s: error %v, want %q on line 2", c.line, err, c.want)
		}
	}
	path := writeTrace(t, `{"session_id": "s", "input_length": 5, "timestamp": 0}`, `{"session_id": "s", "input_length": 5, "timestamp": 9}`)
	if _, err := LoadFormat(path, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "later turns take delay") {
		t.Errorf("timestamp on a later turn: error %v", err)
	}
}

// TestMooncakeSiblingsDiffer: 60 prompts share block 0 and then each has a
// block of its own; drawn at random, some of the 60 would start their
// second block with the same word (a 99 % chance with ~400 words). Every
// pair shares exactly one block.
func TestMooncakeSiblingsDiffer(t *testing.T) {
	var lines []string
	for i := range 60 {
		lines = append(lines, fmt.Sprintf(`{"input_length": 32, "hash_ids": [0, %d]}`, 100+i))
	}
	tok, err := tokenizer.CL100K()
	if err != nil {
		t.Fatal(err)
	}
	d, err := LoadFormat(writeTrace(t, lines...), LoadOptions{Format: FormatMooncake, BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	var ids [][]int
	for _, r := range d.reqs {
		ids = append(ids, tok.Encode(r.Prompt))
	}
	for a := range ids {
		for b := a + 1; b < len(ids); b++ {
			if got := commonPrefix(ids[a], ids[b]); got != 16 {
				t.Fatalf("rows %d and %d share %d tokens, want 16", a, b, got)
			}
		}
	}
}
