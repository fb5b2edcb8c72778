package openai

import (
	"net/http"
	"strings"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/scrub"
)

// spate asks for bodies as they are (Accept-Encoding: identity), on both
// readers: a compressed stream hides when its bytes arrive, and net/http
// would otherwise ask for gzip by itself. A body compressed anyway is
// failed, the encoding named, unless the run's own headers asked for an
// encoding (then it is the user's to read).

// ownEncoding says the run's headers set Accept-Encoding themselves.
func (c *Client) ownEncoding() bool {
	_, ok := c.cfg.Headers["Accept-Encoding"]
	return ok
}

// encodingError is the failure of a 200 whose body came with a
// Content-Encoding other than identity though identity was asked; nil
// when there is none to fail.
func (c *Client) encodingError(enc string) error {
	enc = strings.TrimSpace(enc)
	if enc == "" || strings.EqualFold(enc, "identity") || c.ownEncoding() {
		return nil
	}
	return failure(record.BadResponse, "the server compressed the body (Content-Encoding: %s) though spate asked for identity (Accept-Encoding: identity): a compressed stream hides when its tokens arrive; turn compression off on the server or the proxy in front of it", scrub.Text(enc, 40))
}

// setIdentity asks net/http's request for the body as it is.
func (c *Client) setIdentity(h http.Header) {
	if !c.ownEncoding() {
		h.Set("Accept-Encoding", "identity")
	}
}
