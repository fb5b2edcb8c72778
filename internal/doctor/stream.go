package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/spate-dev/spate/internal/client/sse"
)

// stream is what one streamed chat answer showed.
type stream struct {
	events      int  // data events other than [DONE]
	content     int  // events with content
	roleFirst   bool // the first event's delta carries only the role
	done        bool // data: [DONE] came
	usage       string
	completion  int // usage's completion_tokens (-1: none)
	finish      string
	reasoning   string // the delta field reasoning came in
	logprobs    bool
	errMsg      string
	contentType string
}

// readStream reads a streamed chat answer's events.
func readStream(a answer) stream {
	s := stream{completion: -1, contentType: a.resp.Header.Get("Content-Type")}
	rd := sse.NewReader(bytes.NewReader(a.body), 1<<20, time.Now)
	var ev sse.Event
	var p fastjson.Parser
	for {
		if err := rd.Next(&ev); err != nil {
			if !errors.Is(err, io.EOF) && s.errMsg == "" {
				s.errMsg = err.Error()
			}
			break
		}
		data := bytes.TrimSpace(ev.Data)
		if string(data) == "[DONE]" {
			s.done = true
			continue
		}
		v, err := p.ParseBytes(data)
		if err != nil {
			continue
		}
		s.events++
		if m := v.GetStringBytes("error", "message"); len(m) > 0 {
			s.errMsg = string(m)
		}
		choices := v.GetArray("choices")
		if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
			s.completion = u.GetInt("completion_tokens")
			if len(choices) == 0 {
				s.usage = "in a chunk of its own, after the choices"
			} else {
				s.usage = "beside the last choice"
			}
		}
		for _, ch := range choices {
			d := ch.Get("delta")
			if s.events == 1 && d != nil && len(d.GetStringBytes("role")) > 0 && len(d.GetStringBytes("content")) == 0 {
				s.roleFirst = true
			}
			if d != nil && len(d.GetStringBytes("content")) > 0 {
				s.content++
			}
			for _, f := range []string{"reasoning_content", "reasoning"} {
				if d != nil && len(d.GetStringBytes(f)) > 0 && s.reasoning == "" {
					s.reasoning = f
				}
			}
			if lp := ch.GetArray("logprobs", "content"); len(lp) > 0 {
				s.logprobs = true
			}
			if f := ch.GetStringBytes("finish_reason"); len(f) > 0 {
				s.finish = string(f)
			}
		}
	}
	return s
}

// chat streams one chat answer of a few tokens with ignore_eos and
// usage asked (Config.StreamTokens), and reports the stream's shape, max_tokens, ignore_eos and
// reasoning fields.
func (c *checker) chat(ctx context.Context) {
	askTokens := c.cfg.StreamTokens
	a := c.do(ctx, http.MethodPost, c.endpoint("/chat/completions"), map[string]any{
		"model":          c.report.Model,
		"messages":       []map[string]string{{"role": "user", "content": "Write one short sentence about the sea."}},
		"max_tokens":     askTokens,
		"ignore_eos":     true,
		"stream":         true,
		"stream_options": map[string]bool{"include_usage": true},
	})
	if a.status() != http.StatusOK {
		if a.served() || a.resp == nil {
			c.find("chat", Warn, "the stream check failed: %s", a.message())
		} else {
			c.find("chat", No, "no (%s)", a.message())
		}
		for _, k := range []string{"stream", "max_tokens", "ignore_eos", "reasoning"} {
			c.find(k, Unknown, "not checked: chat did not answer")
		}
		return
	}
	s := readStream(a)
	if s.events == 0 || !strings.HasPrefix(s.contentType, "text/event-stream") {
		c.find("chat", Warn, "answered 200 with %q and %d events, not a stream%s", s.contentType, s.events, errSuffix(s.errMsg))
		for _, k := range []string{"stream", "max_tokens", "ignore_eos", "reasoning"} {
			c.find(k, Unknown, "not checked: no stream")
		}
		return
	}
	c.chatOK = true
	c.find("chat", OK, "yes, streams (%s)", s.contentType)
	shape := []string{fmt.Sprintf("%d events, %d with content", s.events, s.content)}
	if s.roleFirst {
		shape = append(shape, "a first chunk with the role only")
	} else {
		shape = append(shape, "no role-only first chunk")
	}
	st := OK
	switch {
	case s.usage != "":
		shape = append(shape, "usage (stream_options.include_usage asked) "+s.usage)
	default:
		st = Warn
		shape = append(shape, "no usage though stream_options.include_usage was asked: output tokens are counted with the local tokenizer")
	}
	if s.done {
		shape = append(shape, "ends with data: [DONE]")
	} else {
		st = Warn
		shape = append(shape, "no data: [DONE] at the end")
	}
	if s.errMsg != "" {
		st = Warn
		shape = append(shape, "error: "+s.errMsg)
	}
	c.find("stream", st, "%s", strings.Join(shape, "; "))
	got := s.completion
	how := "usage's completion_tokens"
	if got < 0 {
		got, how = s.content, "content chunks"
	}
	switch {
	case got > askTokens:
		c.find("max_tokens", Warn, "not honoured: asked %d, got %d (%s); set output lengths the server keeps to", askTokens, got, how)
	default:
		c.find("max_tokens", OK, "honoured: asked %d, got %d (%s)", askTokens, got, how)
	}
	switch {
	case got == askTokens:
		c.find("ignore_eos", OK, "honoured: %d of %d tokens, finish_reason %q", got, askTokens, s.finish)
	case s.finish == "stop" && got < askTokens:
		c.find("ignore_eos", Warn, "ignored: the model stopped after %d of %d tokens (finish_reason \"stop\"); answers that end early would count as truncated", got, askTokens)
		c.flag("--ignore-eos false", "the server ignores ignore_eos: let answers end where the model ends them")
	default:
		c.find("ignore_eos", Unknown, "%d of %d tokens, finish_reason %q", got, askTokens, s.finish)
	}
	if s.reasoning != "" {
		c.find("reasoning", OK, "streams its reasoning in delta.%s (time to first reasoning and to first answer are measured apart)", s.reasoning)
	} else {
		c.find("reasoning", No, "no reasoning field in the stream (delta.reasoning_content or delta.reasoning)")
	}
}

// logprobs asks a two-token stream with logprobs and reports whether the
// chunks carry them.
func (c *checker) logprobs(ctx context.Context) {
	if !c.chatOK {
		c.find("logprobs", Unknown, "not checked: chat did not stream")
		return
	}
	a := c.do(ctx, http.MethodPost, c.endpoint("/chat/completions"), map[string]any{
		"model":        c.report.Model,
		"messages":     []map[string]string{{"role": "user", "content": "Say hi."}},
		"max_tokens":   2,
		"stream":       true,
		"logprobs":     true,
		"top_logprobs": 2,
	})
	switch {
	case a.status() != http.StatusOK:
		c.find("logprobs", No, "refused: %s (--logprobs would fail every request)", a.message())
	case readStream(a).logprobs:
		c.find("logprobs", OK, "yes: the chunks carry choices[].logprobs.content (--logprobs)")
	default:
		c.find("logprobs", No, "asked, but no chunk carried choices[].logprobs.content")
	}
}

func errSuffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}
