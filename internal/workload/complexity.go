package workload

import (
	"encoding/json"
	"math"
	"strings"
)

// Complexity scores a request from 0 to 100 (docs/design.md §3) as the sum of:
//
//	length     up to 40: log-scaled prompt tokens, 40 at 32k tokens
//	turns      up to 15: 15 × (turns − 1) / 9, capped (10 turns or more)
//	structure  up to 15: code fences 6, JSON objects 5, nesting depth 1 a level up to 4
//	tools      up to 15: 3 per tool definition, capped at 5 tools
//	output     up to 15: log-scaled requested output tokens, 15 at 8k
//
// Shaped rate = base rate × 0.75^(score/20) (see ShapeFactor).
func Complexity(r *Request) float64 {
	tokens := r.InputTokens
	if tokens == 0 {
		tokens = estimateTokens(r)
	}
	score := 40 * math.Min(1, math.Log1p(float64(tokens)/128)/math.Log1p(32768.0/128))
	turns := max(len(r.Turns), 1)
	if n := userTurns(r.Messages); n > turns {
		turns = n
	}
	score += 15 * math.Min(1, float64(turns-1)/9)
	score += structure(r)
	if len(r.Tools) > 0 {
		var tools []json.RawMessage
		if json.Unmarshal(r.Tools, &tools) == nil {
			score += 3 * math.Min(5, float64(len(tools)))
		}
	}
	out := r.MaxTokens
	for _, t := range r.Turns {
		out += t.MaxTokens
	}
	if out > 0 {
		score += 15 * math.Min(1, math.Log1p(float64(out)/64)/math.Log1p(8192.0/64))
	}
	return math.Min(100, score)
}

// ShapeFactor is the complexity-aware rate multiplier 0.75^(score/20).
func ShapeFactor(score float64) float64 { return math.Pow(0.75, score/20) }

func userTurns(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == "user" {
			n++
		}
	}
	return n
}

// texts calls f with each piece of a request's text.
func texts(r *Request, f func(string)) {
	f(r.Prompt)
	for _, m := range r.Messages {
		f(m.Text())
	}
	for _, t := range r.Turns {
		f(t.Prompt)
	}
}

// structure scores code, JSON and nesting in a request's text, up to 15.
func structure(r *Request) float64 {
	code, object, deepest := false, false, 0
	texts(r, func(s string) {
		code = code || strings.Contains(s, "```")
		if i := strings.IndexByte(s, '{'); i >= 0 && strings.IndexByte(s[i:], ':') >= 0 {
			object = true
		}
		deepest = max(deepest, nesting(s))
	})
	var score float64
	if code {
		score += 6
	}
	if object {
		score += 5
	}
	score += math.Min(4, float64(max(deepest-1, 0)))
	return math.Min(15, score)
}

// maxScoredDepth is the nesting depth from which structure's score no
// longer grows (1 a level above the first, up to 4).
const maxScoredDepth = 5

// nesting is the deepest nesting of brackets in s ({, [ and ( alike), up
// to maxScoredDepth. Prompts are long and seldom nested: with fewer than
// two opening brackets, counted by the byte counts (which the runtime
// vectorises), the depth is their number and s is not walked.
func nesting(s string) int {
	opens := strings.Count(s, "{") + strings.Count(s, "[") + strings.Count(s, "(")
	if opens < 2 {
		return opens
	}
	depth, deepest := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{', '[', '(':
			depth++
			if deepest = max(deepest, depth); deepest >= maxScoredDepth {
				return deepest
			}
		case '}', ']', ')':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}
