package openai

import "bytes"

// A stream's chunks differ, mostly, only in their text: the id, created
// time, model and the rest of the shape repeat byte for byte. chunkTemplate
// keeps the bytes around the text of the last chunk skim read in full, and
// a chunk that has the same bytes before and after a plain string (no
// escapes, no control characters) where that chunk had its text is read
// with two comparisons and a scan of the text: skim's walk is a function
// of the bytes, so it would find what it found before, with the new text.
// FuzzTemplateMatchesSkim holds the two to the same result.
type chunkTemplate struct {
	ok bool
	// own holds the prefix (up to and with the text's opening quote) and
	// then the suffix (from its closing quote), copied: a chunk's bytes
	// live in a read buffer the next read overwrites.
	own           []byte
	prefix        int    // len of the prefix in own
	reasoning     bool   // the text is reasoning, not answer
	model, finish []byte // into own, as skim found them
}

// read fills out from data as skim does, by the template when data
// matches it, else by skim, keeping data as the template when it can
// serve as one.
func (t *chunkTemplate) read(data []byte, out *chunkSkim) bool {
	if t.ok && t.match(data, out) {
		return true
	}
	if !skim(data, out) {
		return false
	}
	t.keep(data, out)
	return true
}

// match fills out when data is the template's prefix, a non-empty plain
// string and the template's suffix.
func (t *chunkTemplate) match(data []byte, out *chunkSkim) bool {
	prefix, suffix := t.own[:t.prefix], t.own[t.prefix:]
	if len(data) < len(prefix)+len(suffix)+1 || !bytes.Equal(data[:len(prefix)], prefix) {
		return false
	}
	s := skimmer{b: data, i: len(prefix) - 1}
	text, ok := s.plainString()
	if !ok || len(text) == 0 || !bytes.Equal(data[s.i-1:], suffix) {
		return false
	}
	out.model, out.finish = t.model, t.finish
	out.parts = append(out.parts[:0], skimPart{})
	if t.reasoning {
		out.parts[0].reasoning = text
	} else {
		out.parts[0].answer = text
	}
	return true
}

// keep makes data, which skim read into out, the template: when out has
// one choice with one non-empty text, a string of data's.
func (t *chunkTemplate) keep(data []byte, out *chunkSkim) {
	t.ok = false
	if len(out.parts) != 1 {
		return
	}
	p := out.parts[0]
	text, reasoning := p.answer, false
	switch {
	case len(p.answer) > 0 && len(p.reasoning) == 0:
	case len(p.answer) == 0 && len(p.reasoning) > 0:
		text, reasoning = p.reasoning, true
	default:
		return
	}
	at, ok := offset(data, text)
	if !ok || at == 0 || data[at-1] != '"' || at+len(text) >= len(data) || data[at+len(text)] != '"' {
		return
	}
	end := at + len(text)
	t.own = append(append(t.own[:0], data[:at]...), data[end:]...)
	t.prefix, t.reasoning = at, reasoning
	// model and finish are strings outside the text: the same bytes of
	// own.
	if t.model, ok = t.relocate(data, out.model, at, end); !ok {
		return
	}
	if t.finish, ok = t.relocate(data, out.finish, at, end); !ok {
		return
	}
	t.ok = true
}

// relocate maps v, a slice of data outside [at, end), to the same bytes
// of own; nil stays nil.
func (t *chunkTemplate) relocate(data, v []byte, at, end int) ([]byte, bool) {
	if v == nil {
		return nil, true
	}
	o, ok := offset(data, v)
	switch {
	case !ok:
		return nil, false
	case o+len(v) <= at:
		return t.own[o : o+len(v) : o+len(v)], true
	case o >= end:
		o -= end - at
		return t.own[o : o+len(v) : o+len(v)], true
	}
	return nil, false
}

// offset is where v starts in data, when v is a slice of data's.
func offset(data, v []byte) (int, bool) {
	if cap(v) > cap(data) {
		return 0, false
	}
	o := cap(data) - cap(v)
	if o > len(data)-len(v) || len(v) > 0 && &data[o] != &v[0] || len(v) == 0 && o > len(data) {
		return 0, false
	}
	return o, true
}
