package workload

import "sync"

// ExpectedTokens is what token-rate pacing counts for a request before it
// is sent: its input tokens (as the source counted them, else about four
// characters a token) plus the output tokens it asks for (max_tokens); with
// outputOnly, the output tokens alone. A conversation counts each turn's
// own prompt and max_tokens (not the history resent with later turns). The
// actual output may be shorter (an answer that ends before max_tokens), so
// the tokens served can fall short of the tokens paced; the result reports
// both.
func ExpectedTokens(r *Request, outputOnly bool) float64 {
	if len(r.Turns) > 0 {
		var sum float64
		for _, t := range r.Turns {
			sum += float64(t.MaxTokens)
			if !outputOnly {
				in := t.InputTokens
				if in == 0 {
					in = (len(t.Prompt) + 3) / 4
				}
				sum += float64(in)
			}
		}
		if !outputOnly {
			for _, m := range r.Messages {
				sum += float64((len(m.Text()) + 3) / 4)
			}
		}
		return sum
	}
	out := float64(r.MaxTokens)
	if outputOnly {
		return out
	}
	in := r.InputTokens
	if in == 0 {
		in = estimateTokens(r)
	}
	return float64(in) + out
}

// Memo returns a Source that keeps the last few requests src made, so that
// a pacer that reads request n−1 (token-rate pacing, complexity shaping)
// and the engine that then sends request n do not build each twice.
func Memo(src Source) Source {
	return &memo{src: src}
}

// memoSize is how many recent requests a memo keeps.
const memoSize = 4

type memo struct {
	src  Source
	mu   sync.Mutex
	keys [memoSize]uint64
	reqs [memoSize]*Request
}

// Request implements Source.
func (m *memo) Request(n uint64) (*Request, error) {
	i := n % memoSize
	m.mu.Lock()
	if r := m.reqs[i]; r != nil && m.keys[i] == n {
		m.mu.Unlock()
		return r, nil
	}
	m.mu.Unlock()
	r, err := m.src.Request(n)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.keys[i], m.reqs[i] = n, r
	m.mu.Unlock()
	return r, nil
}

// Digest implements Source.
func (m *memo) Digest() string { return m.src.Digest() }
