package openai

import (
	"encoding/json"
	"strconv"
)

// appendPlain writes b as json.Marshal does when b has only the fields of
// a plain chat or completions request (text messages or a prompt, no
// tools, sampling or logprobs fields), and reports false, writing
// nothing, otherwise. encoding/json spends about 20 instructions a byte
// escaping a string; a string with nothing to escape is copied here
// (eight bytes checked at a time), one with something to escape is
// written by json.Marshal. TestChatBodyMatchesMarshaler and its fuzz test
// hold the bytes to json.Marshal's.
func (b *chatBody) appendPlain(dst []byte) ([]byte, bool) {
	if b.Input != nil || len(b.Tools) > 0 || b.Temperature != nil || b.TopP != nil || b.Logprobs != nil || b.TopLogprobs != nil {
		return dst, false
	}
	ms, text := b.Messages.([]textMessage)
	if b.Messages != nil && !text {
		return dst, false
	}
	dst = append(dst, `{"model":`...)
	dst = appendString(dst, b.Model)
	if text {
		dst = append(dst, `,"messages":[`...)
		for i, m := range ms {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"role":`...)
			dst = appendString(dst, m.Role)
			dst = append(dst, `,"content":`...)
			dst = appendString(dst, m.Content)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if b.Prompt != nil {
		dst = append(dst, `,"prompt":`...)
		dst = appendString(dst, *b.Prompt)
	}
	if b.MaxTokens != 0 {
		dst = append(dst, `,"max_tokens":`...)
		dst = strconv.AppendInt(dst, int64(b.MaxTokens), 10)
	}
	if b.Stream {
		dst = append(dst, `,"stream":true`...)
	}
	if b.StreamOptions != nil {
		dst = append(dst, `,"stream_options":{"include_usage":`...)
		dst = strconv.AppendBool(dst, b.StreamOptions.IncludeUsage)
		dst = append(dst, '}')
	}
	if b.IgnoreEOS {
		dst = append(dst, `,"ignore_eos":true`...)
	}
	if b.User != "" {
		dst = append(dst, `,"user":`...)
		dst = appendString(dst, b.User)
	}
	return append(dst, '}'), true
}

// appendString writes s as a JSON string, as json.Marshal does (HTML
// characters escaped).
func appendString(dst []byte, s string) []byte {
	if !plainText(s) {
		q, _ := json.Marshal(s) // a string always encodes
		return append(dst, q...)
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// plainText says whether json.Marshal writes s as it is: printable ASCII
// without a quote, a backslash or any of <, > and &.
func plainText(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if special(x) {
			return false
		}
	}
	for ; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// special says whether a byte of x is one plainText refuses (see
// plainString for the method).
func special(x uint64) bool {
	has := func(c uint64) uint64 { y := x ^ (lo * c); return (y - lo) &^ y }
	return ((x-lo*0x20)&^x|x|has('"')|has('\\')|has('<')|has('>')|has('&'))&hi != 0
}
