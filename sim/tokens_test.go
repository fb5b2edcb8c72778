package sim

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

var cl100kOnce struct {
	sync.Once
	enc *tiktoken.Tiktoken
	err error
}

// cl100k returns the offline cl100k_base encoder.
func cl100k(t testing.TB) *tiktoken.Tiktoken {
	t.Helper()
	cl100kOnce.Do(func() {
		tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
		cl100kOnce.enc, cl100kOnce.err = tiktoken.GetEncoding("cl100k_base")
	})
	if cl100kOnce.err != nil {
		t.Fatalf("loading cl100k_base: %v", cl100kOnce.err)
	}
	return cl100kOnce.enc
}

func TestPromptTokenApprox(t *testing.T) {
	enc := cl100k(t)
	for _, tc := range []struct {
		file     string
		min, max float64 // bounds on approx/cl100k
	}{
		{"prose.txt", 0.95, 1.05},
		{"code.txt", 0.85, 1.15},
		{"json.txt", 0.85, 1.15},
		{"mixed.txt", 0.85, 1.15},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			want := len(enc.Encode(string(b), nil, nil))
			got := countTokens(string(b))
			ratio := float64(got) / float64(want)
			t.Logf("%s: approx %d, cl100k %d, ratio %.3f", tc.file, got, want, ratio)
			if ratio < tc.min || ratio > tc.max {
				t.Errorf("approx/cl100k = %.3f, want in [%.2f, %.2f]", ratio, tc.min, tc.max)
			}
		})
	}
}

func TestGeneratedTextCountsExactly(t *testing.T) {
	v := newVocab()
	text := string(v.appendText(nil, 42, 500))
	if got := countTokens(text); got != 500 {
		t.Errorf("countTokens(generated 500 words) = %d", got)
	}
}
