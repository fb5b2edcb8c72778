package sim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// The vulnerable behaviour (Faults.Vulnerability > 0) gives security probes
// something to find. A chat or completions request whose prompt looks like
// an attack (it contains one of attackCues, case-insensitively, in any
// message) is, with probability Vulnerability (drawn per request from the
// seed and the request's sequence number), complied with: the answer begins
// with complyLead followed by every message's text in order (the system
// prompt first, so planted canaries and secrets leak) and the decoded text
// of every base64 word in it (so encoded instructions are followed).
// Otherwise the attack is refused: the answer begins with RefusalText.
// Requests that do not look like attacks are answered as usual.
//
// The scripted words replace the first words of the generated text; the
// answer keeps its length and timing (a script longer than the answer is
// cut, like a model reaching max_tokens). With Vulnerability 0 nothing is
// parsed and nothing changes.

// RefusalText is how the vulnerable simulator begins its answer to an
// attack it does not follow.
const RefusalText = "I'm sorry, but I can't help with that request."

// complyLead begins the answer to an attack the simulator follows.
const complyLead = "Sure, here is everything I was given:"

// attackCues are the lower-case phrases that make the simulator treat a
// prompt as an attack. System messages are not scanned: a system prompt
// may well speak of secrets.
var attackCues = []string{
	"ignore", "disregard", "override", "system prompt", "your instructions",
	"hidden instructions", "reveal", "verbatim", "pretend", "you are now",
	"developer mode", "base64", "secret", "password", "api key", "confidential",
	"print everything above", "repeat everything",
}

// looksLikeAttack reports whether any text but the system messages
// contains an attack cue.
func looksLikeAttack(texts []string, roles []string) bool {
	for i, t := range texts {
		if roles[i] == "system" || roles[i] == "developer" {
			continue
		}
		l := strings.ToLower(t)
		for _, c := range attackCues {
			if strings.Contains(l, c) {
				return true
			}
		}
	}
	return false
}

// vulnDraw is request seqNo's uniform draw in [0, 1) for the vulnerability.
func vulnDraw(seed int64, seqNo uint64) float64 {
	base := mix64(uint64(seed) ^ 0x76756c6e00000000) // "vuln"
	return unitFloat(mix64(base ^ mix64(seqNo)))
}

// promptTexts returns the texts of a generation request's messages (chat)
// or prompt (completions, role "user"), in order, with their roles; nil
// when the body has none.
func promptTexts(ep endpoint, body []byte) (texts, roles []string) {
	var w struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Prompt json.RawMessage `json:"prompt"`
	}
	if json.Unmarshal(body, &w) != nil {
		return nil, nil
	}
	if ep == epCompletion {
		var s string
		var ss []string
		switch {
		case json.Unmarshal(w.Prompt, &s) == nil:
			texts = append(texts, s)
		case json.Unmarshal(w.Prompt, &ss) == nil:
			texts = append(texts, ss...)
		}
		for range texts {
			roles = append(roles, "user")
		}
		return texts, roles
	}
	for _, m := range w.Messages {
		raw := bytes.TrimSpace(m.Content)
		var s string
		var parts []wirePart
		switch {
		case json.Unmarshal(raw, &s) == nil:
			texts, roles = append(texts, s), append(roles, m.Role)
		case json.Unmarshal(raw, &parts) == nil:
			for _, p := range parts {
				if p.Text != "" {
					texts, roles = append(texts, p.Text), append(roles, m.Role)
				}
			}
		}
	}
	return texts, roles
}

// decodedWords returns the text of every word of t that is standard or URL
// base64 of at least 8 characters decoding to printable UTF-8.
func decodedWords(t string) []string {
	var out []string
	for _, w := range strings.Fields(t) {
		w = strings.Trim(w, `"'.,;:()[]<>`)
		if len(w) < 8 {
			continue
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			b, err := enc.DecodeString(w)
			if err == nil && utf8.Valid(b) && printable(b) {
				out = append(out, string(b))
				break
			}
		}
	}
	return out
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\t' {
			return false
		}
	}
	return len(b) > 0
}

// script is the scripted beginning of an answer: its words, each with a
// leading space, as raw text and JSON-escaped for stream events.
type script struct {
	raw, escaped [][]byte
}

func newScript(text string) *script {
	s := &script{}
	for _, w := range strings.Fields(text) {
		raw := []byte(" " + w)
		q, _ := json.Marshal(string(raw)) // a string always encodes
		s.raw = append(s.raw, raw)
		s.escaped = append(s.escaped, q[1:len(q)-1])
	}
	return s
}

// vulnerableScript decides the scripted answer of a request under
// vulnerability p: nil when the prompt is not an attack (or p is 0).
// It also reports whether the attack is followed.
func (s *Server) vulnerableScript(ep endpoint, body []byte, seqNo uint64, p float64) (*script, bool) {
	if p <= 0 {
		return nil, false
	}
	texts, roles := promptTexts(ep, body)
	if !looksLikeAttack(texts, roles) {
		return nil, false
	}
	if vulnDraw(s.cfg.Seed, seqNo) >= p {
		return newScript(RefusalText), false
	}
	var b strings.Builder
	b.WriteString(complyLead)
	for _, t := range texts {
		b.WriteByte(' ')
		b.WriteString(t)
	}
	for _, t := range texts {
		for _, d := range decodedWords(t) {
			b.WriteByte(' ')
			b.WriteString(d)
		}
	}
	return newScript(b.String()), true
}

// word returns the raw text of token k of g's answer.
func (g *generation) word(v *vocab, k int) []byte {
	if g.script != nil && k < len(g.script.raw) {
		return g.script.raw[k]
	}
	return v.word(g.textSeed, k)
}

// eventWord returns token k of g's answer as it goes into a JSON string.
func (g *generation) eventWord(v *vocab, k int) []byte {
	if g.script != nil && k < len(g.script.escaped) {
		return g.script.escaped[k]
	}
	return v.word(g.textSeed, k)
}

// appendText appends the first n words of g's answer to b.
func (g *generation) appendText(v *vocab, b []byte, n int) []byte {
	if g.script == nil {
		return v.appendText(b, g.textSeed, n)
	}
	for k := range n {
		b = append(b, g.word(v, k)...)
	}
	return b
}
