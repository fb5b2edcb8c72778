// Package tokenizer counts tokens with a BPE vocabulary shipped inside the
// binary (OpenAI's cl100k_base and o200k_base, Llama 3's), so nothing is
// downloaded at run time.
//
// Stage: workload (prompt lengths), and metrics (local token counts).
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package tokenizer

import (
	"context"
	"fmt"
	"sync"
)

// CountContext counts text with c, giving up with ctx's error when ctx
// ends first if c can stop part way (a BPE can: a count of megabytes
// takes about a second).
func CountContext(ctx context.Context, c Counter, text string) (int, error) {
	if cc, ok := c.(interface {
		CountContext(context.Context, string) (int, error)
	}); ok {
		return cc.CountContext(ctx, text)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return c.Count(text), nil
}

// Counter counts the tokens of a text.
type Counter interface {
	// Count returns the number of tokens in text.
	Count(text string) int
	// Name names the vocabulary, as the result file records it.
	Name() string
}

// The pre-tokenizer patterns of OpenAI's vocabularies (tiktoken's).
const (
	cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	o200kPattern  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?` +
		`|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// openAI loads one of OpenAI's vocabularies from the files shipped in the
// binary.
func openAI(name, file, pattern string) (*BPE, error) {
	ranks, err := loadRanks(file)
	if err != nil {
		return nil, fmt.Errorf("loading the %s tokenizer: %w", name, err)
	}
	return newBPE(name, pattern, ranks)
}

var (
	loadOnce sync.Once
	cl100k   *BPE
	loadErr  error
)

// CL100K returns the cl100k_base tokenizer, loading it on first use (about
// 10 ms of CPU, BenchmarkLoadRanks). It is safe for concurrent use.
func CL100K() (*BPE, error) {
	loadOnce.Do(func() { cl100k, loadErr = openAI("cl100k_base", "cl100k_base.tiktoken", cl100kPattern) })
	return cl100k, loadErr
}
