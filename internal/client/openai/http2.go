package openai

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/record"
)

// An HTTP/2-only server (cleartext, prior knowledge) most often resets an
// HTTP/1.1 request's connection before anything of its preface can be
// read, which looked like an unreachable target. The check before a run
// (Models), when its request is reset with no response, sends HTTP/2's
// preface once on a new connection: a server that answers it speaks
// HTTP/2 only, and the check fails saying so. During the run no probe is
// sent (it would be traffic the result does not show, and a reset a chaos
// proxy injects into it would go uncounted): a response that begins with
// an HTTP/2 frame fails saying so, and so does a reset once the check has
// found the server HTTP/2-only, the same on both readers.

// http2Only is the message of a request to an HTTP/2-only server.
const http2Only = "the server speaks HTTP/2 only (over cleartext, with prior knowledge: it answered HTTP/2's connection preface and not spate's HTTP/1.1 request); spate speaks HTTP/1.1: enable HTTP/1.1 on the server, or put a proxy in front of it that speaks HTTP/1.1 to clients"

// h2Probe caches whether the target speaks HTTP/2 only.
type h2Probe struct {
	mu    sync.Mutex
	known bool
	only  bool
}

// h2ProbeTimeout bounds the check.
const h2ProbeTimeout = 2 * time.Second

// speaksHTTP2Only reports whether the target (an http:// one) answers
// HTTP/2's connection preface: probed once, by the check.
func (c *Client) speaksHTTP2Only(ctx context.Context) bool {
	c.h2.mu.Lock()
	defer c.h2.mu.Unlock()
	if c.h2.known {
		return c.h2.only
	}
	u, err := url.Parse(c.endpoint)
	if err != nil || u.Scheme != "http" {
		c.h2.known = true
		return false
	}
	addr := u.Host
	if u.Port() == "" {
		addr += ":80"
	}
	c.h2.only = rawhttp.SpeaksHTTP2(ctx, addr, h2ProbeTimeout)
	c.h2.known = ctx.Err() == nil
	return c.h2.only
}

// asHTTP2Only turns the failure (kind, msg) of a request that got no
// HTTP/1.1 response (err) into bad_response with http2Only when the
// response began with an HTTP/2 frame, or the connection was reset and
// the check found the target HTTP/2-only; it returns them as they are
// otherwise. It sends nothing.
func (c *Client) asHTTP2Only(err error, kind record.ErrorKind, msg string) (record.ErrorKind, string) {
	if errors.Is(err, rawhttp.ErrHTTP2) || http2Frame(err) || kind == record.ConnectReset && c.knownHTTP2Only() {
		return record.BadResponse, http2Only
	}
	return kind, msg
}

// knownHTTP2Only says the check found the target HTTP/2-only.
func (c *Client) knownHTTP2Only() bool {
	c.h2.mu.Lock()
	defer c.h2.mu.Unlock()
	return c.h2.known && c.h2.only
}

// checkHTTP2Only says whether the failure err of the check's request,
// of kind, is an HTTP/2-only server's: a response that began with an
// HTTP/2 frame, or a reset with no response from a server that answers
// HTTP/2's preface (probed once).
func (c *Client) checkHTTP2Only(ctx context.Context, err error, kind record.ErrorKind) bool {
	if errors.Is(err, rawhttp.ErrHTTP2) || http2Frame(err) {
		return true
	}
	return kind == record.ConnectReset && c.speaksHTTP2Only(ctx)
}

// http2Frame reports whether err is net/http's malformed response that
// began with an HTTP/2 frame.
func http2Frame(err error) bool {
	if err == nil {
		return false
	}
	const mark = `malformed HTTP response `
	m := err.Error()
	i := strings.Index(m, mark)
	if i < 0 {
		return false
	}
	q, qerr := strconv.QuotedPrefix(m[i+len(mark):])
	if qerr != nil {
		return false
	}
	s, uerr := strconv.Unquote(q)
	return uerr == nil && rawhttp.IsHTTP2Frame([]byte(s))
}
