package openai

import (
	"encoding/binary"
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

// plainSize is about the length of b written by appendPlain, so that the
// body (a few KiB for a long prompt) is allocated once.
func (b *chatBody) plainSize() int {
	n := 160 + len(b.Model) + len(b.User)
	if ms, ok := b.Messages.([]textMessage); ok {
		for _, m := range ms {
			n += 32 + len(m.Role) + len(m.Content)
		}
	}
	if b.Prompt != nil {
		n += len(*b.Prompt)
	}
	return n
}

// appendString writes s as a JSON string, as json.Marshal does (HTML
// characters escaped): copied when it has nothing to escape, by
// json.Marshal when it has.
func appendString(dst []byte, s string) []byte {
	n := len(dst)
	dst = append(dst, '"')
	dst = append(dst, s...)
	if !plainText(dst[n+1:]) {
		q, _ := json.Marshal(s) // a string always encodes
		return append(dst[:n], q...)
	}
	return append(dst, '"')
}

// plainText says whether json.Marshal writes b's text as it is: printable
// ASCII without a quote, a backslash or any of <, > and &. It checks eight
// bytes at a time (see plainString for the method).
func plainText(b []byte) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, bs := x^(lo*'"'), x^(lo*'\\')
		lt, gt, amp := x^(lo*'<'), x^(lo*'>'), x^(lo*'&')
		if ((x-lo*0x20)&^x|x|(q-lo)&^q|(bs-lo)&^bs|(lt-lo)&^lt|(gt-lo)&^gt|(amp-lo)&^amp)&hi != 0 {
			return false
		}
	}
	for ; i < len(b); i++ {
		c := b[i]
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
