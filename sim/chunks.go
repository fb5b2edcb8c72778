package sim

import (
	"encoding/json"
	"strconv"
)

// chunker holds the preformatted bytes of one stream's server-sent events.
// Every content event is prefix + token text + suffix; only the token text
// changes, so writing a token is three appends into a reused buffer with no
// allocation and no JSON encoding. The words need no JSON escaping.
type chunker struct {
	ep         endpoint
	head       []byte // `data: {"id":…,"object":…,"created":…,"model":…,`
	prefix     []byte // head + the choice up to the opening quote of the text
	suffix     []byte // the rest of a content event
	lastSuffix []byte // the rest of the last content event (finish_reason)
	// lp, when set, puts each token's logprobs in its event: suffix and
	// lastSuffix then start after the logprobs object (see logprobs.go).
	lp       *logprobPlan
	lpBefore []byte // between the token text and the logprobs object
}

func newChunker(g *generation) *chunker {
	model, _ := json.Marshal(g.model) // a string always encodes
	object := "chat.completion.chunk"
	if g.ep == epCompletion {
		object = "text_completion"
	}
	head := make([]byte, 0, 128+len(model))
	head = append(head, `data: {"id":"`...)
	head = append(head, g.id...)
	head = append(head, `","object":"`...)
	head = append(head, object...)
	head = append(head, `","created":`...)
	head = strconv.AppendInt(head, g.created, 10)
	head = append(head, `,"model":`...)
	head = append(head, model...)
	head = append(head, ',')

	c := &chunker{ep: g.ep, head: head, lp: g.lp}
	c.prefix = append([]byte(nil), head...)
	if g.lp != nil {
		c.lpBefore = []byte(`","logprobs":`)
		if g.ep == epChat {
			c.lpBefore = []byte(`"},"logprobs":`)
			c.prefix = append(c.prefix, `"choices":[{"index":0,"delta":{"content":"`...)
			c.suffix = []byte(`,"finish_reason":null}]}` + "\n\n")
		} else {
			c.prefix = append(c.prefix, `"choices":[{"index":0,"text":"`...)
			c.suffix = []byte(`,"finish_reason":null,"stop_reason":null}]}` + "\n\n")
		}
		c.lastSuffix = []byte(`,"finish_reason":"` + g.finish + `","stop_reason":null}]}` + "\n\n")
		return c
	}
	if g.ep == epChat {
		c.prefix = append(c.prefix, `"choices":[{"index":0,"delta":{"content":"`...)
		c.suffix = []byte(`"},"logprobs":null,"finish_reason":null}]}` + "\n\n")
		c.lastSuffix = []byte(`"},"logprobs":null,"finish_reason":"` + g.finish + `","stop_reason":null}]}` + "\n\n")
	} else {
		c.prefix = append(c.prefix, `"choices":[{"index":0,"text":"`...)
		c.suffix = []byte(`","logprobs":null,"finish_reason":null,"stop_reason":null}]}` + "\n\n")
		c.lastSuffix = []byte(`","logprobs":null,"finish_reason":"` + g.finish + `","stop_reason":null}]}` + "\n\n")
	}
	return c
}

// appendRole appends the first chat event: the assistant role, no content.
func (c *chunker) appendRole(b []byte) []byte {
	b = append(b, c.head...)
	return append(b, `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
}

// appendToken appends one content event.
func (c *chunker) appendToken(b, word []byte, last bool) []byte {
	b = append(b, c.prefix...)
	b = append(b, word...)
	if c.lp != nil {
		b = append(b, c.lpBefore...)
		if c.ep == epChat {
			b = c.lp.appendChat(b, word)
		} else {
			b = c.lp.appendCompletion(b, word)
		}
	}
	if last {
		return append(b, c.lastSuffix...)
	}
	return append(b, c.suffix...)
}

// appendUsage appends the usage event sent when stream_options.include_usage
// is set: no choices, just usage.
func (c *chunker) appendUsage(b []byte, prompt, completion int) []byte {
	b = append(b, c.head...)
	b = append(b, `"choices":[],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+completion), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	return append(b, "}}\n\n"...)
}
