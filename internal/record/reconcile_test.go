package record

import (
	"slices"
	"testing"
)

func TestReconcileChunkTokens(t *testing.T) {
	// The server's truth: 16 tokens in 12 chunks, every 4th carrying 3.
	truth := []int32{1, 1, 1, 3, 1, 1, 1, 3, 1, 1, 1, 1}
	for _, tc := range []struct {
		name  string
		local []int32 // the tokenizer's count of each chunk's text
		usage int
		want  []int32
	}{
		{"an offset a chunk (c = t + 1)", []int32{2, 2, 2, 4, 2, 2, 2, 4, 2, 2, 2, 2}, 16, truth},
		{"a ratio (c = 3t)", []int32{3, 3, 3, 9, 3, 3, 3, 9, 3, 3, 3, 3}, 16, truth},
		{"agreeing", truth, 16, truth},
		{"no usage", []int32{2, 2}, -1, []int32{2, 2}},
		{"every chunk alike", []int32{2, 2, 2, 2}, 6, []int32{2, 2, 1, 1}},
		{"fewer tokens than chunks", []int32{1, 3, 1, 3}, 2, []int32{0, 1, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Record{ChunkTokens: slices.Clone(tc.local), UsageTokens: tc.usage}
			r.ReconcileChunkTokens()
			if !slices.Equal(r.ChunkTokens, tc.want) {
				t.Fatalf("got %v, want %v", r.ChunkTokens, tc.want)
			}
			if tc.usage >= 0 {
				sum := 0
				for _, v := range r.ChunkTokens {
					sum += int(v)
				}
				if sum != tc.usage {
					t.Fatalf("sum %d, want the usage %d", sum, tc.usage)
				}
			}
		})
	}
}

// FuzzReconcileChunkTokens: whatever the counts, the result sums to the
// usage, and each chunk carries at least one token when there are enough
// (unless the tokenizer already agreed with the usage: then nothing changes).
func FuzzReconcileChunkTokens(f *testing.F) {
	f.Add([]byte{2, 2, 2, 4}, 6)
	f.Add([]byte{0, 0, 1}, 9)
	f.Fuzz(func(t *testing.T, local []byte, usage int) {
		if len(local) == 0 || len(local) > 1000 || usage < 0 || usage > 100000 {
			return
		}
		r := &Record{UsageTokens: usage}
		before := 0
		for _, b := range local {
			r.ChunkTokens = append(r.ChunkTokens, int32(b))
			before += int(b)
		}
		r.ReconcileChunkTokens()
		sum := 0
		for _, v := range r.ChunkTokens {
			sum += int(v)
			if v < 0 || before != usage && usage >= len(local) && v < 1 {
				t.Fatalf("chunk count %d (usage %d, %d chunks)", v, usage, len(local))
			}
		}
		if sum != usage {
			t.Fatalf("sum %d, usage %d (local %v)", sum, usage, local)
		}
	})
}
