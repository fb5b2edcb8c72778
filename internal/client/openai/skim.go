package openai

import "encoding/binary"

// skim reads the common shape of a streamed chunk without building a
// parse tree: one pass over the bytes that validates what it walks and
// picks out the few fields a record needs. Anything it is not sure of (an
// escaped string it needs, usage, an error, tool calls, any grammar it
// does not validate) makes it give up, and the chunk is parsed in full
// (fastjson) instead; FuzzSkimMatchesFastjson holds the two to the same
// result.

// chunkSkim is what skim found in a chunk.
type chunkSkim struct {
	model []byte
	// The text fields of every choice, in order: content and text are
	// answer text, reasoning the first of reasoning_content and reasoning.
	parts []skimPart
	// finish is the last choice's non-empty finish_reason.
	finish []byte
}

type skimPart struct {
	answer, reasoning []byte
}

type skimmer struct {
	b                      []byte
	i                      int
	out                    *chunkSkim
	depth                  int
	modelSeen, choicesSeen bool
}

// maxSkimDepth bounds nesting (fastjson rejects deeper than 300).
const maxSkimDepth = 64

// skim fills out from data, reporting false when data needs the full
// parser.
func skim(data []byte, out *chunkSkim) bool {
	out.model, out.parts, out.finish = nil, out.parts[:0], nil
	s := skimmer{b: data, out: out}
	s.ws()
	if !s.object(s.top) {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

// ws skips whitespace. Chunks seldom have any, so the test of the first
// byte is inlined and the loop is not.
func (s *skimmer) ws() {
	if s.i < len(s.b) && s.b[s.i] <= ' ' {
		s.wsLoop()
	}
}

func (s *skimmer) wsLoop() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// object walks an object, calling field for each key (raw, unescaped
// keys only) with the cursor on its value; field consumes the value.
func (s *skimmer) object(field func(key []byte) bool) bool {
	if s.i >= len(s.b) || s.b[s.i] != '{' || s.depth >= maxSkimDepth {
		return false
	}
	s.depth++
	ok := s.fields(field)
	s.depth--
	return ok
}

// fields is object's loop, past the opening brace.
func (s *skimmer) fields(field func(key []byte) bool) bool {
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		key, ok := s.plainString()
		if !ok {
			return false
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.ws()
		if !field(key) {
			return false
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
			s.ws()
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

// top handles a field of the chunk.
func (s *skimmer) top(key []byte) bool {
	switch string(key) {
	case "model":
		if s.modelSeen {
			return s.value()
		}
		s.modelSeen = true
		v, _, ok := s.stringOrOther()
		s.out.model = v
		return ok
	case "error":
		return s.null() // an error event: the full parser reports it
	case "object":
		// vLLM's error event is {"object": "error", "message": …}: the
		// full parser reports it.
		v, _, ok := s.stringOrOther()
		return ok && string(v) != "error"
	case "usage":
		return s.null() // usage is read by the full parser
	case "choices":
		if s.choicesSeen {
			return s.value()
		}
		s.choicesSeen = true
		return s.choices()
	}
	return s.value()
}

func (s *skimmer) choices() bool {
	if s.i < len(s.b) && s.b[s.i] != '[' {
		return s.value() // not an array: no choices
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for {
		if s.i >= len(s.b) || s.b[s.i] != '{' {
			return false // a choice that is not an object: leave it to fastjson
		}
		var p skimPart
		var hasDelta, textSeen, deltaSeen, finishSeen, lpSeen bool
		var text []byte
		ok := s.object(func(key []byte) bool {
			switch string(key) {
			case "delta":
				if deltaSeen {
					return s.value()
				}
				deltaSeen, hasDelta = true, true
				return s.delta(&p)
			case "text":
				if textSeen {
					return s.value()
				}
				textSeen = true
				v, _, ok := s.stringOrOther()
				text = v
				return ok
			case "finish_reason":
				if finishSeen {
					return s.value()
				}
				finishSeen = true
				v, _, ok := s.stringOrOther()
				if len(v) > 0 {
					s.out.finish = v
				}
				return ok
			case "logprobs":
				if lpSeen {
					return s.value()
				}
				lpSeen = true
				return s.null() // logprobs are read by the full parser
			}
			return s.value()
		})
		if !ok {
			return false
		}
		if !hasDelta {
			p.answer = text
		}
		s.out.parts = append(s.out.parts, p)
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
			s.ws()
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// delta reads a choice's delta: content, reasoning_content, reasoning;
// tool calls go to the full parser.
func (s *skimmer) delta(p *skimPart) bool {
	if s.i < len(s.b) && s.b[s.i] != '{' {
		return s.value() // null or another type: no text
	}
	var content, rc, r []byte
	var cSeen, rcSeen, rSeen, tSeen bool
	ok := s.object(func(key []byte) bool {
		var dst *[]byte
		var seen *bool
		switch string(key) {
		case "content":
			dst, seen = &content, &cSeen
		case "reasoning_content":
			dst, seen = &rc, &rcSeen
		case "reasoning":
			dst, seen = &r, &rSeen
		case "tool_calls":
			if tSeen {
				return s.value()
			}
			tSeen = true
			return s.emptyOrNull()
		default:
			return s.value()
		}
		if *seen {
			return s.value()
		}
		*seen = true
		v, _, ok := s.stringOrOther()
		*dst = v
		return ok
	})
	if !ok {
		return false
	}
	p.answer = content
	p.reasoning = rc
	if len(p.reasoning) == 0 {
		p.reasoning = r
	}
	return true
}

// emptyOrNull accepts null, a non-array (fastjson's GetArray gives nil) or
// an empty array; a non-empty array gives up.
func (s *skimmer) emptyOrNull() bool {
	if s.i < len(s.b) && s.b[s.i] == '[' {
		j := s.i + 1
		for j < len(s.b) && (s.b[j] == ' ' || s.b[j] == '\t' || s.b[j] == '\n' || s.b[j] == '\r') {
			j++
		}
		if j < len(s.b) && s.b[j] == ']' {
			s.i = j + 1
			return true
		}
		return false
	}
	return s.value()
}

// null accepts only the literal null (other values give up).
func (s *skimmer) null() bool {
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// stringOrOther reads a value: a string's bytes when it is a string with
// no escapes; nil for any other valid value. It gives up on an escaped
// string.
func (s *skimmer) stringOrOther() ([]byte, bool, bool) {
	if s.i < len(s.b) && s.b[s.i] == '"' {
		v, ok := s.plainString()
		return v, true, ok
	}
	return nil, false, s.value()
}

// plainString reads a string with no escapes or control characters; it
// gives up on any other.
func (s *skimmer) plainString() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	j := start
	// Eight bytes at a time while none of them is a quote, a backslash or
	// a control character (SWAR: a byte of x below n sets its top bit in
	// (x - n×lo) &^ x & hi; a byte equal to c is one below 1 in x ^ c×lo).
	for ; j+8 <= len(s.b); j += 8 {
		x := binary.LittleEndian.Uint64(s.b[j:])
		q, bs := x^(lo*'"'), x^(lo*'\\')
		if ((x-lo*0x20)&^x|(q-lo)&^q|(bs-lo)&^bs)&hi != 0 {
			break
		}
	}
	for ; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// lo and hi are the low and high bit of every byte of a word.
const (
	lo = 0x0101010101010101
	hi = 0x8080808080808080
)

// value skips any value, validating it; strings with escapes give up.
func (s *skimmer) value() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, ok := s.plainString()
		return ok
	case c == '{':
		return s.object(func([]byte) bool { return s.value() })
	case c == '[':
		if s.depth >= maxSkimDepth {
			return false
		}
		s.depth++
		defer func() { s.depth-- }()
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return true
		}
		for {
			if !s.value() {
				return false
			}
			s.ws()
			if s.i >= len(s.b) {
				return false
			}
			switch s.b[s.i] {
			case ',':
				s.i++
				s.ws()
			case ']':
				s.i++
				return true
			default:
				return false
			}
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return false
}

func (s *skimmer) literal(l string) bool {
	if len(s.b)-s.i >= len(l) && string(s.b[s.i:s.i+len(l)]) == l {
		s.i += len(l)
		return true
	}
	return false
}

// number reads a JSON number (strict grammar).
func (s *skimmer) number() bool {
	j := s.i
	if j < len(s.b) && s.b[j] == '-' {
		j++
	}
	digits := func() int {
		k := j
		for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
			j++
		}
		return j - k
	}
	if j < len(s.b) && s.b[j] == '0' {
		j++
	} else if digits() == 0 {
		return false
	}
	if j < len(s.b) && s.b[j] == '.' {
		j++
		if digits() == 0 {
			return false
		}
	}
	if j < len(s.b) && (s.b[j] == 'e' || s.b[j] == 'E') {
		j++
		if j < len(s.b) && (s.b[j] == '+' || s.b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return false
		}
	}
	s.i = j
	return true
}
