package tokenizer

import (
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/spate-dev/spate/internal/capread"
)

//go:embed llama3/tokenizer.json.gz
var llama3JSON []byte

var (
	llamaOnce sync.Once
	llama3    *BPE
	llamaErr  error
)

// Llama3 returns the Llama 3 tokenizer (128k byte-level BPE), shipped in
// the binary and loaded on first use (about half a second).
func Llama3() (*BPE, error) {
	llamaOnce.Do(func() {
		zr, err := gzip.NewReader(bytes.NewReader(llama3JSON))
		if err != nil {
			llamaErr = fmt.Errorf("loading the llama3 tokenizer: %w", err)
			return
		}
		data, err := io.ReadAll(zr)
		if err != nil {
			llamaErr = fmt.Errorf("loading the llama3 tokenizer: %w", err)
			return
		}
		llama3, llamaErr = parseHF(data, "llama3")
	})
	return llama3, llamaErr
}

// Load returns a tokenizer by name: cl100k_base (the default), o200k_base,
// llama3, or the path of a Hugging Face tokenizer.json of a byte-level BPE
// model (Llama 3, Qwen 2, ...).
func Load(name string) (*BPE, error) { return LoadContext(nil, name) }

// LoadContext is Load whose read of a tokenizer.json ends when ctx is
// done (nil: never): a FIFO or a pipe cannot keep Ctrl-C from working.
func LoadContext(ctx context.Context, name string) (*BPE, error) {
	switch name {
	case "", "cl100k_base", "cl100k":
		return CL100K()
	case "o200k_base", "o200k":
		return O200K()
	case "llama3", "llama-3":
		return Llama3()
	}
	if strings.HasSuffix(name, ".json") {
		data, err := capread.ReadFile(ctx, name, capread.DataLimit, "")
		if err != nil {
			return nil, fmt.Errorf("loading tokenizer: %w", err)
		}
		return parseHF(data, name)
	}
	return nil, fmt.Errorf("tokenizer %q: use cl100k_base, o200k_base, llama3, the path of a tokenizer.json, or server (the target's own tokenize endpoint)", name)
}

var (
	o200kOnce sync.Once
	o200k     *BPE
	o200kErr  error
)

// O200K returns the o200k_base tokenizer (GPT-4o's), shipped in the
// binary and loaded on first use.
func O200K() (*BPE, error) {
	o200kOnce.Do(func() { o200k, o200kErr = openAI("o200k_base", "o200k_base.tiktoken", o200kPattern) })
	return o200k, o200kErr
}

// hfTokenizer is the part of a Hugging Face tokenizer.json spate reads.
type hfTokenizer struct {
	PreTokenizer *hfPre `json:"pre_tokenizer"`
	Model        struct {
		Type  string         `json:"type"`
		Vocab map[string]int `json:"vocab"`
	} `json:"model"`
}

type hfPre struct {
	Type          string  `json:"type"`
	Pretokenizers []hfPre `json:"pretokenizers"`
	Pattern       *struct {
		Regex string `json:"Regex"`
	} `json:"pattern"`
}

// splitPattern finds the Split pre-tokenizer's regular expression.
func (p *hfPre) splitPattern() string {
	if p == nil {
		return ""
	}
	if p.Type == "Split" && p.Pattern != nil {
		return p.Pattern.Regex
	}
	for i := range p.Pretokenizers {
		if s := p.Pretokenizers[i].splitPattern(); s != "" {
			return s
		}
	}
	return ""
}

// parseHF builds a BPE from a byte-level BPE tokenizer.json whose
// token ids are merge ranks (true of Llama 3 and Qwen 2, which come from
// tiktoken-style vocabularies).
func parseHF(data []byte, name string) (*BPE, error) {
	var t hfTokenizer
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("tokenizer %s: not a tokenizer.json: %w", name, err)
	}
	if t.Model.Type != "BPE" || len(t.Model.Vocab) == 0 {
		return nil, fmt.Errorf("tokenizer %s: model type %q: only byte-level BPE vocabularies are supported", name, t.Model.Type)
	}
	pattern := t.PreTokenizer.splitPattern()
	if pattern == "" {
		return nil, fmt.Errorf("tokenizer %s: no Split pre-tokenizer pattern", name)
	}
	dec := byteDecoder()
	ranks := make(map[string]int, len(t.Model.Vocab))
	for tok, id := range t.Model.Vocab {
		var b strings.Builder
		for _, r := range tok {
			c, ok := dec[r]
			if !ok {
				return nil, fmt.Errorf("tokenizer %s: token %q is not byte-level BPE", name, tok)
			}
			b.WriteByte(c)
		}
		ranks[b.String()] = id
	}
	// Added (special) tokens are counted as text, as Count does for
	// every vocabulary.
	return newBPE(name, pattern, ranks)
}

// byteDecoder inverts GPT-2's byte-to-unicode map: printable bytes stand
// for themselves, the others for code points from 256 on.
func byteDecoder() map[rune]byte {
	m := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[rune(b)] = byte(b)
		} else {
			m[rune(256+n)] = byte(b)
			n++
		}
	}
	return m
}
