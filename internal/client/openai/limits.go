package openai

import (
	"errors"
	"fmt"
	"math"

	"github.com/valyala/fastjson"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/scrub"
)

// kindError is a failure that carries its record kind: a response over a
// limit, not what the API sends, or with usage that cannot be true.
type kindError struct {
	kind record.ErrorKind
	msg  string
}

func (e *kindError) Error() string { return e.msg }

func failure(kind record.ErrorKind, format string, a ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, a...)}
}

// kindOf returns the kind a kindError carries.
func kindOf(err error) (record.ErrorKind, string, bool) {
	var ke *kindError
	if errors.As(err, &ke) {
		return ke.kind, ke.msg, true
	}
	return "", "", false
}

func (c *Client) maxText() int {
	if c.cfg.MaxText > 0 {
		return int(min(c.cfg.MaxText, math.MaxInt32))
	}
	return DefaultMaxText
}

func (c *Client) maxBody() int64 {
	if c.cfg.MaxBody > 0 {
		return c.cfg.MaxBody
	}
	return DefaultMaxBody
}

// checkText fails a response whose kept text went over the limit.
func (c *Client) checkText(st *stream) error {
	if len(st.text) > c.maxText() {
		return failure(record.TooLarge, "the response's text is over the responseText limit of %d bytes (raise it with --limit responseText=SIZE)", c.maxText())
	}
	return nil
}

// model keeps the model id a response names (the first one), escaped;
// one over the limit fails the request.
func (c *Client) model(rec *record.Record, m []byte) error {
	if rec.Model != "" || len(m) == 0 {
		return nil
	}
	if int64(len(m)) > c.maxModelID() {
		return failure(record.TooLarge, "the response names a model id of %d bytes, over the modelId limit of %d bytes (raise it with --limit modelId=SIZE)", len(m), c.maxModelID())
	}
	rec.Model = scrub.Text(string(m), 0)
	return nil
}

// maxUsage is the largest token count a usage field may hold: more is
// no count a server means.
const maxUsage = 100_000_000

// readUsage takes a usage object's counts into rec; a negative, fractional
// or absurd count (or one that is not a number) fails the request with
// record.BadUsage rather than being summed.
func readUsage(u *fastjson.Value, rec *record.Record) error {
	count := func(name string, dst *int) error {
		v := u.Get(name)
		if v == nil || v.Type() == fastjson.TypeNull {
			return nil
		}
		f, err := v.Float64()
		if err != nil || f < 0 || f > maxUsage || f != math.Trunc(f) {
			return failure(record.BadUsage, "usage.%s is %s: not a token count (0 to %d)", name, scrub.Text(v.String(), 40), maxUsage)
		}
		*dst = int(f)
		return nil
	}
	if err := count("prompt_tokens", &rec.InputTokens); err != nil {
		return err
	}
	if err := count("completion_tokens", &rec.UsageTokens); err != nil {
		return err
	}
	// The reasoning tokens among them are informative only (the usage
	// check allows for reasoning the stream did not carry): a count that
	// is no count, or over the output tokens, is ignored.
	if v := u.Get("completion_tokens_details", "reasoning_tokens"); v != nil && v.Type() == fastjson.TypeNumber {
		if f, err := v.Float64(); err == nil && f >= 0 && f == math.Trunc(f) && f <= float64(max(rec.UsageTokens, 0)) {
			rec.UsageReasoning = int(f)
		}
	}
	return nil
}

// endOfStream is the error of a stream that ended without [DONE]: a
// broken stream when it carried events, else not a stream at all. stray
// are the stream's lines that were no SSE field: the server's message,
// when they are a JSON error, is kept in the error, and the start of what
// came instead of a stream.
func endOfStream(c *Client, st *stream, stray []byte) error {
	msg, isErr := strayError(&st.parser, stray)
	if st.events == 0 {
		if isErr {
			return failure(record.BadResponse, "not a server-sent event stream: the server answered with an error: %s", msg)
		}
		if len(stray) > 0 {
			return failure(record.BadResponse, "not a server-sent event stream: the response carried no event; it began %s", scrub.Text(string(stray), 80))
		}
		return failure(record.BadResponse, "not a server-sent event stream: the response carried no event")
	}
	end := errNoDone
	if c.cfg.API == Responses {
		end = errNoCompleted
	}
	if isErr {
		return fmt.Errorf("%w; the server sent an error outside any event: %s", end, msg)
	}
	return end
}

// errNoCompleted is a Responses API stream that ended without its
// response.completed (or response.incomplete) event.
var errNoCompleted = errors.New("stream ended without a response.completed event")
