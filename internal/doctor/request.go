package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/valyala/fastjson"

	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/scrub"
)

// maxBody bounds what the check reads of one answer: its requests ask for
// a few tokens, so a longer answer is cut, not read.
const maxBody = 1 << 20

// answer is one request's outcome.
type answer struct {
	resp      *http.Response // nil when err is set
	body      []byte
	sent, got time.Time
	err       error
}

// status is the answer's HTTP status, 0 when no answer came.
func (a answer) status() int {
	if a.resp == nil {
		return 0
	}
	return a.resp.StatusCode
}

// served says whether the answer shows the endpoint exists: any answer
// but 404 and 405 (a 400 refusing the check's request is an endpoint that
// read it), and not a network error.
func (a answer) served() bool {
	s := a.status()
	return s != 0 && s != http.StatusNotFound && s != http.StatusMethodNotAllowed
}

// message is the server's error message in the answer's JSON body, or
// its status line when it has none.
func (a answer) message() string {
	if a.err != nil {
		return scrub.Text(a.err.Error(), 160)
	}
	var p fastjson.Parser
	if v, err := p.ParseBytes(a.body); err == nil {
		for _, path := range [][]string{{"error", "message"}, {"message"}, {"error"}, {"detail"}} {
			if s := v.GetStringBytes(path...); len(s) > 0 {
				return "HTTP " + itoa(a.status()) + ": " + scrub.Text(string(s), 160)
			}
		}
	}
	return "HTTP " + a.resp.Status
}

// do sends one request (a JSON body when body is not nil) and reads the
// answer whole, up to maxBody.
func (c *checker) do(ctx context.Context, method, u string, body any) answer {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return answer{err: err}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return answer{err: err}
	}
	for k, v := range c.cfg.Headers {
		req.Header[k] = v
	}
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	a := answer{sent: time.Now()}
	c.sent++
	a.resp, a.err = c.cfg.Client.Do(req)
	if a.err != nil {
		a.resp = nil
		a.err = scrub.NewRedactor(c.cfg.APIKey).Error(a.err)
		return a
	}
	defer a.resp.Body.Close()
	a.body, a.err = io.ReadAll(io.LimitReader(a.resp.Body, maxBody))
	a.got = time.Now()
	if a.err != nil {
		a.err = scrub.NewRedactor(c.cfg.APIKey).Error(a.err)
	}
	return a
}

// endpoint is the API's URL of path (e.g. "/chat/completions").
func (c *checker) endpoint(path string) string { return openai.Endpoint(c.api, path) }

func itoa(n int) string { return strconv.Itoa(n) }
