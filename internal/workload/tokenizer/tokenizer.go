// Package tokenizer counts tokens with a BPE vocabulary shipped inside the
// binary (OpenAI's cl100k_base), so nothing is downloaded at run time.
//
// Stage: workload (prompt lengths), and metrics (local token counts).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package tokenizer

import (
	"fmt"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// Counter counts the tokens of a text.
type Counter interface {
	// Count returns the number of tokens in text.
	Count(text string) int
	// Name names the vocabulary, as the result file records it.
	Name() string
}

// BPE is a Counter backed by a tiktoken vocabulary.
type BPE struct {
	name string
	enc  *tiktoken.Tiktoken
}

var _ Counter = (*BPE)(nil)

// Count implements Counter. Special tokens in text are counted as text.
func (b *BPE) Count(text string) int {
	return len(b.enc.EncodeOrdinary(text))
}

// Name implements Counter.
func (b *BPE) Name() string { return b.name }

var (
	loadOnce sync.Once
	cl100k   *BPE
	loadErr  error
)

// CL100K returns the cl100k_base tokenizer, loading it on first use (about
// 100 ms). It is safe for concurrent use.
func CL100K() (*BPE, error) {
	loadOnce.Do(func() {
		tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
		enc, err := tiktoken.GetEncoding("cl100k_base")
		if err != nil {
			loadErr = fmt.Errorf("loading the cl100k_base tokenizer: %w", err)
			return
		}
		cl100k = &BPE{name: "cl100k_base", enc: enc}
	})
	return cl100k, loadErr
}
