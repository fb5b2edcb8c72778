package openai

import (
	"github.com/valyala/fastjson"

	"github.com/spate-dev/spate/internal/scrub"
)

// errorOf reads the error a server sent as a JSON object where a chunk, a
// stream or an answer was due: OpenAI's {"error": {"message": …}} (or
// {"error": "…"}) and vLLM's {"object": "error", "message": …}. It returns
// the server's message, escaped and bounded, and false for any other
// object.
func errorOf(v *fastjson.Value) (string, bool) {
	if v == nil || v.Type() != fastjson.TypeObject {
		return "", false
	}
	e := v.Get("error")
	switch {
	case e != nil && e.Type() == fastjson.TypeObject:
		if m := e.Get("message"); m != nil && m.Type() == fastjson.TypeString {
			return scrub.Text(string(m.GetStringBytes()), 300), true
		}
		return scrub.Text(e.String(), 300), true
	case e != nil && e.Type() == fastjson.TypeString:
		return scrub.Text(string(e.GetStringBytes()), 300), true
	case e != nil && e.Type() != fastjson.TypeNull:
		return scrub.Text(e.String(), 300), true
	case string(v.GetStringBytes("object")) == "error":
		if m := v.GetStringBytes("message"); len(m) > 0 {
			return scrub.Text(string(m), 300), true
		}
		return scrub.Text(v.String(), 300), true
	}
	return "", false
}

// strayError reads the server's error from the lines of a stream that were
// no SSE field (sse.Reader.Stray): a JSON error body sent instead of a
// stream, or after its events.
func strayError(p *fastjson.Parser, stray []byte) (string, bool) {
	if len(stray) == 0 {
		return "", false
	}
	v, err := p.ParseBytes(stray)
	if err != nil {
		return "", false
	}
	return errorOf(v)
}
