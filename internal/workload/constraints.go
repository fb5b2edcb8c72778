package workload

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/metrics/check"
)

// Constraints are the semantic constraints injected into requests (the
// seeds' "semantic constraint injection, e.g. max_context=32k,
// tool_calls≥2").
type Constraints struct {
	// MaxContext, when positive, bounds a request's prompt tokens plus
	// max_tokens: a longer prompt loses its start (the question, at its
	// end, stays).
	MaxContext int
	// ToolCalls, when positive, makes a request need that many tool calls:
	// tool definitions and an instruction to call them are added, and a
	// check that the answer made that many.
	ToolCalls int
}

// maxToolCalls bounds tool_calls (the tools a request is given).
const maxToolCalls = 8

// ParseConstraints reads a constraints spec: items separated by commas,
// max_context=N (N tokens, with k for ×1024: 32k is 32768) and
// tool_calls>=N (1 to 8), e.g. "max_context=32k, tool_calls>=2".
func ParseConstraints(spec string) (Constraints, error) {
	var c Constraints
	if strings.TrimSpace(spec) == "" {
		return c, fmt.Errorf("constraints %q: write max_context=N and/or tool_calls>=N, e.g. max_context=32k,tool_calls>=2", spec)
	}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		key, op, val := splitOp(item)
		switch strings.ToLower(key) {
		case "max_context":
			if op != "=" && op != "<=" {
				return c, fmt.Errorf("constraints %q: write max_context=N (N tokens, e.g. 32k), not %q", spec, item)
			}
			n, err := tokenCount(val)
			if err != nil || n < 16 {
				return c, fmt.Errorf("constraints %q: max_context %q is not a number of tokens of at least 16 (e.g. 4096 or 32k)", spec, val)
			}
			if c.MaxContext > 0 {
				return c, fmt.Errorf("constraints %q: max_context is given twice", spec)
			}
			c.MaxContext = n
		case "tool_calls":
			if op != ">=" && op != "=" {
				return c, fmt.Errorf("constraints %q: write tool_calls>=N (at least N calls), not %q", spec, item)
			}
			n, err := strconv.Atoi(strings.TrimSpace(val))
			if err != nil || n < 1 || n > maxToolCalls {
				return c, fmt.Errorf("constraints %q: tool_calls %q is not a whole number from 1 to %d", spec, val, maxToolCalls)
			}
			if c.ToolCalls > 0 {
				return c, fmt.Errorf("constraints %q: tool_calls is given twice", spec)
			}
			c.ToolCalls = n
		default:
			return c, fmt.Errorf("constraints %q: unknown constraint %q (use max_context=N or tool_calls>=N)", spec, item)
		}
	}
	return c, nil
}

// String is the canonical spec, which ParseConstraints reads back.
func (c Constraints) String() string {
	var parts []string
	if c.MaxContext > 0 {
		parts = append(parts, "max_context="+strconv.Itoa(c.MaxContext))
	}
	if c.ToolCalls > 0 {
		parts = append(parts, "tool_calls>="+strconv.Itoa(c.ToolCalls))
	}
	return strings.Join(parts, ",")
}

// splitOp cuts "key OP value" at the first of >=, <=, = (or ≥, ≤).
func splitOp(s string) (key, op, val string) {
	s = strings.NewReplacer("≥", ">=", "≤", "<=").Replace(s)
	i := strings.IndexAny(s, "<>=")
	if i < 0 {
		return s, "", ""
	}
	j := i
	for j < len(s) && strings.IndexByte("<>=", s[j]) >= 0 {
		j++
	}
	return strings.TrimSpace(s[:i]), s[i:j], strings.TrimSpace(s[j:])
}

// tokenCount reads a token count: digits, or digits and k (×1024).
func tokenCount(s string) (int, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	mult := 1
	if v, ok := strings.CutSuffix(s, "k"); ok {
		s, mult = v, 1024
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 1<<30/mult {
		return 0, fmt.Errorf("%q: not a token count", s)
	}
	return n * mult, nil
}

// toolNames are the synthetic tools a tool_calls constraint offers.
var toolNames = []string{"lookup_order", "search_docs", "get_weather", "get_account", "convert_currency", "check_stock", "book_slot", "send_email"}

// toolsJSON are the definitions of the first n synthetic tools.
func toolsJSON(n int) json.RawMessage {
	type fn struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	}
	type tool struct {
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	var ts []tool
	for _, name := range toolNames[:n] {
		ts = append(ts, tool{Type: "function", Function: fn{Name: name,
			Description: "Looks up " + strings.ReplaceAll(name, "_", " ") + " for the user's request.",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}},
				"required": []string{"query"}}}})
	}
	b, _ := json.Marshal(ts) // plain values: always encodes
	return b
}

// toolCheck is the check a tool_calls constraint adds.
func toolCheck(n int) *check.Check {
	set, _ := check.Compile([]experiment.Check{{Name: fmt.Sprintf("tool_calls>=%d", n), Kind: "tool_call", Min: float64(n)}})
	return set.Checks[0]
}

// apply injects the constraints into r (a copy the caller owns); tok counts
// prompt tokens when the request does not know them (nil: about four
// characters a token). It returns what it changed, for the request's
// label.
func (c Constraints) apply(r *Request, tok Counter) string {
	var did []string
	if c.ToolCalls > 0 {
		if len(r.Tools) == 0 {
			r.Tools = toolsJSON(max(c.ToolCalls, 2))
		}
		ask := fmt.Sprintf("\n\nBefore you answer, call at least %d of the tools you are given, then answer with what they return.", c.ToolCalls)
		setUserText(r, func(s string) string { return s + ask })
		cs := &check.Set{Checks: []*check.Check{toolCheck(c.ToolCalls)}}
		if r.Checks != nil {
			cs.Checks = append(append([]*check.Check(nil), r.Checks.Checks...), cs.Checks...)
		}
		r.Checks, r.KeepAnswer = cs, true
		did = append(did, "tools")
	}
	if c.MaxContext > 0 {
		if r.MaxTokens >= c.MaxContext {
			r.MaxTokens = c.MaxContext / 2
			did = append(did, "max_tokens")
		}
		budget := c.MaxContext - r.MaxTokens
		count := func(s string) int {
			if tok != nil {
				return tok.Count(s)
			}
			return (len(s) + 3) / 4
		}
		other := 0 // tokens outside the text cut: system prompt, other messages
		for _, m := range r.Messages {
			other += count(m.Text())
		}
		var cut bool
		setUserText(r, func(s string) string {
			other -= count(s) // the text cut is one of the messages when there are any
			if len(r.Messages) == 0 {
				other = 0
			}
			keep := budget - max(other, 0)
			if n := count(s); n <= keep {
				return s
			}
			cut = true
			return keepEnd(s, max(keep, 1), count)
		})
		if cut {
			r.InputTokens = 0 // no longer the source's count
			did = append(did, "truncated")
		}
	}
	return strings.Join(did, "+")
}

// setUserText rewrites the request's user text: the prompt, else its last
// user message, else its first conversation turn.
func setUserText(r *Request, f func(string) string) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := &r.Messages[i]
		if m.Role != "user" {
			continue
		}
		msgs := append([]Message(nil), r.Messages...)
		m = &msgs[i]
		if len(m.Parts) > 0 {
			m.Parts = append([]Part(nil), m.Parts...)
			for j := range m.Parts {
				if m.Parts[j].Type == "text" {
					m.Parts[j].Text = f(m.Parts[j].Text)
					break
				}
			}
		} else {
			m.Content = f(m.Content)
		}
		r.Messages = msgs
		return
	}
	if len(r.Turns) > 0 {
		r.Turns = append([]Turn(nil), r.Turns...)
		r.Turns[0].Prompt = f(r.Turns[0].Prompt)
		r.Turns[0].InputTokens = 0
		return
	}
	r.Prompt = f(r.Prompt)
}

// keepEnd returns the longest ending of s, cut at a space, of at most n
// tokens.
func keepEnd(s string, n int, count func(string) int) string {
	// Binary search on the start, over the word boundaries.
	var starts []int
	for i := 1; i < len(s); i++ {
		if s[i-1] == ' ' || s[i-1] == '\n' {
			starts = append(starts, i)
		}
	}
	lo, hi := 0, len(starts) // answer: the first start whose ending fits
	for lo < hi {
		mid := (lo + hi) / 2
		if count(s[starts[mid]:]) <= n {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == len(starts) {
		return "" // not even the last word fits
	}
	return s[starts[lo]:]
}
