package chaos

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spate-dev/spate/internal/workload"
)

// Mix is the request-level chaos of the workload side: fractions of
// requests turned into edge cases a service must reject or survive. Each
// is labelled with an Intent ("chaos:max_tokens_1", "chaos:oversize",
// "chaos:malformed"), so the result's per-intent breakdown classifies how
// the service answered them.
type Mix struct {
	// MaxTokens1 asks for a single output token.
	MaxTokens1 float64
	// Oversize makes the prompt longer than MaxContext tokens.
	Oversize float64
	// Malformed replaces the body with invalid JSON. Only protocol
	// clients that send workload.Request.Body raw honour it (--api http).
	Malformed float64
	// MaxContext is the model's context window in tokens, which an
	// oversize prompt exceeds (default 32768).
	MaxContext int
}

// Intents given to chaos requests.
const (
	IntentMaxTokens1 = "chaos:max_tokens_1"
	IntentOversize   = "chaos:oversize"
	IntentMalformed  = "chaos:malformed"
)

// DefaultMaxContext is Mix.MaxContext when it is not set.
const DefaultMaxContext = 32768

// ParseMix reads the flag form "max_tokens_1=0.05,oversize=0.02,
// malformed=0.01,max_context=8192".
func ParseMix(s string) (Mix, error) {
	var m Mix
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Mix{}, fmt.Errorf("request chaos %q: want key=value", kv)
		}
		if k == "max_context" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return Mix{}, fmt.Errorf("request chaos max_context=%q: want a positive number of tokens", v)
			}
			m.MaxContext = n
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return Mix{}, fmt.Errorf("request chaos %s=%q: %w", k, v, err)
		}
		switch k {
		case "max_tokens_1":
			m.MaxTokens1 = f
		case "oversize":
			m.Oversize = f
		case "malformed":
			m.Malformed = f
		default:
			return Mix{}, fmt.Errorf("request chaos %q: unknown key (use max_tokens_1, oversize, malformed, max_context)", k)
		}
	}
	return m, m.Validate()
}

// Validate reports fractions out of range.
func (m Mix) Validate() error {
	for _, f := range []float64{m.MaxTokens1, m.Oversize, m.Malformed} {
		if math.IsNaN(f) || f < 0 || f > 1 {
			return fmt.Errorf("request chaos: fractions must be in [0, 1], got %g", f)
		}
	}
	if s := m.MaxTokens1 + m.Oversize + m.Malformed; s > 1+1e-12 {
		return fmt.Errorf("request chaos: fractions add up to %g, more than 1", s)
	}
	if m.MaxContext < 0 {
		return fmt.Errorf("request chaos: max_context must be > 0, got %d", m.MaxContext)
	}
	return nil
}

// Requests wraps src so that a seeded fraction of its requests are chaos
// requests as mix says; the same seed and index give the same request.
func Requests(src workload.Source, mix Mix, seed int64) workload.Source {
	if mix.MaxContext == 0 {
		mix.MaxContext = DefaultMaxContext
	}
	return &chaosSource{src: src, mix: mix, seed: seed}
}

type chaosSource struct {
	src  workload.Source
	mix  Mix
	seed int64
}

// malformedBody is sent as a malformed request: truncated JSON.
var malformedBody = []byte(`{"model": "x", "messages": [{"role": "user", "content": "unterminated`)

// Request returns request n, perhaps turned into a chaos request.
func (c *chaosSource) Request(n uint64) (*workload.Request, error) {
	req, err := c.src.Request(n)
	if err != nil {
		return nil, err
	}
	d := newDraws(c.seed, 0x7265, n)
	u := d.u()
	m := c.mix
	switch {
	case u < m.MaxTokens1:
		r := *req
		r.MaxTokens, r.Intent = 1, IntentMaxTokens1
		return &r, nil
	case u < m.MaxTokens1+m.Oversize:
		r := *req
		r.Intent = IntentOversize
		// Each " the" is one cl100k token: the prompt alone then exceeds
		// the window, whatever it held before.
		filler := strings.Repeat(" the", m.MaxContext+1)
		if len(r.Messages) > 0 {
			r.Messages = append([]workload.Message(nil), r.Messages...)
			last := &r.Messages[len(r.Messages)-1]
			last.Content += filler
		} else {
			r.Prompt += filler
		}
		if r.InputTokens > 0 {
			r.InputTokens += m.MaxContext + 1
		}
		return &r, nil
	case u < m.MaxTokens1+m.Oversize+m.Malformed:
		r := *req
		r.Intent, r.Body, r.BodyTemplate = IntentMalformed, malformedBody, nil
		return &r, nil
	}
	return req, nil
}

// Digest mixes the chaos settings into the inner workload's digest.
func (c *chaosSource) Digest() string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s|chaos|%g|%g|%g|%d|%d", c.src.Digest(), c.mix.MaxTokens1, c.mix.Oversize, c.mix.Malformed, c.mix.MaxContext, c.seed))
	return hex.EncodeToString(h[:])
}
