package vector

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"time"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/scrub"
)

// newHTTPClient is the HTTP client of the HTTP backends: keep-alive
// connections enough for a loaded run, whose reads are stamped (see
// stamps).
func newHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	t.DialContext = rawhttp.StampDial(t.DialContext)
	return &http.Client{Transport: t, Timeout: 2 * time.Minute}
}

// stamps is what a search's response's reads said of when it ended, when
// its connection stamps them (rawhttp.StampedConn): the last read of its
// body, and the read lag of the response. A probe passes one in the
// context of a search (withStamps); callJSON fills it.
type stamps struct {
	sc   *rawhttp.StampedConn
	last rawhttp.Read
	lag  time.Duration
}

type stampsKey struct{}

// withStamps returns ctx carrying s for callJSON to fill.
func withStamps(ctx context.Context, s *stamps) context.Context {
	return context.WithValue(ctx, stampsKey{}, s)
}

// trace arranges for the response's connection to be kept in s, if it is
// a stamped one that carries one response at a time (HTTP/1.1: over
// HTTP/2 its reads are every stream's).
func (s *stamps) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		s.sc, _ = rawhttp.StampedResponses(i.Conn)
	}})
}

// read keeps the connection's last read, once the body is read.
func (s *stamps) read() {
	if s.sc != nil {
		s.last, s.lag = s.sc.Last(), s.sc.Lag()
	}
}

// httpStatusError is a response with a status other than 2xx.
type httpStatusError struct {
	Status int
	Body   string
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.Status, scrub.Text(e.Body, 200))
}

// callJSON sends in as JSON (nil: no body) and decodes a 2xx response
// into out (nil: discarded).
func callJSON(ctx context.Context, c *http.Client, method, url string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("%s %s: encoding body: %w", method, url, err)
		}
		body = bytes.NewReader(b)
	}
	st, _ := ctx.Value(stampsKey{}).(*stamps)
	if st != nil {
		*st = stamps{}
		ctx = st.trace(ctx)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading response: %w", method, url, err)
	}
	if st != nil {
		st.read()
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %w", method, url, &httpStatusError{resp.StatusCode, string(b)})
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: bad response %.120q: %w", method, url, b, err)
		}
	}
	return nil
}
