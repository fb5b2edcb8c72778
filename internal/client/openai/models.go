package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/internal/serverinfo"
	"github.com/spate-dev/spate/result"
)

// DefaultMaxModelList bounds the /models listing (Config.MaxModelList).
const DefaultMaxModelList = 4 << 20

// Models lists the model ids the server serves (GET /models). It fails
// within 10 s when the server is unreachable, and when the listing is over
// the limit (Config.MaxModelList) or names an id that is not printable
// text or over Config.MaxModelID.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	base := strings.TrimRight(c.cfg.BaseURL, "/")
	where := scrub.URL(base) + "/models"
	sent := time.Now()
	resp, err := c.getModels(ctx, Endpoint(c.cfg.BaseURL, "/models"))
	if err != nil {
		kind, msg := classify(ctx, err)
		if reset(err) {
			kind = record.ConnectReset
		}
		if c.checkHTTP2Only(ctx, err, kind) {
			return nil, unreachable(fmt.Sprintf("target %s: %s", scrub.URL(base), http2Only))
		}
		return nil, unreachable(fmt.Sprintf("target %s is unreachable: %s", scrub.URL(base), msg))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusNotFound {
			if v1, ok := c.v1Lists(ctx, base); ok {
				return nil, fmt.Errorf("listing models at %s: HTTP 404: %w: did you mean --target %s? (its /models lists models)", where, ErrTargetWithoutV1, v1)
			}
		}
		return nil, fmt.Errorf("listing models at %s: HTTP %d", where, resp.StatusCode)
	}
	limit := c.cfg.MaxModelList
	if limit <= 0 {
		limit = DefaultMaxModelList
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("listing models at %s: %w", where, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("listing models at %s: the listing is over the modelList limit of %d bytes (pass --model, or raise --limit modelList=SIZE)", where, limit)
	}
	info := serverinfo.Read(resp, b, c.cfg.Model, sent, time.Now())
	c.listing.Store(&info)
	return c.parseModels(b, where)
}

// ErrUnreachable marks a model listing that reached no server: passing
// --model would not help.
var ErrUnreachable = errors.New("unreachable")

// unreachable is an error that says its message and is ErrUnreachable.
type unreachable string

func (u unreachable) Error() string        { return string(u) }
func (u unreachable) Is(target error) bool { return target == ErrUnreachable }

// ErrTargetWithoutV1 is a target whose path lacks the /v1 of the API: its
// /models answers 404 where /v1/models lists models.
var ErrTargetWithoutV1 = errors.New("the target's path lacks /v1")

// v1Lists says whether the target base, whose /models answered 404, lists
// models under base/v1 (a --target given as http://host:port for
// http://host:port/v1), and returns that URL, scrubbed, for the message.
func (c *Client) v1Lists(ctx context.Context, base string) (string, bool) {
	v1 := Endpoint(base, "/v1")
	if u, err := url.Parse(base); err != nil || strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
		return "", false
	}
	resp, err := c.getModels(ctx, Endpoint(v1, "/models"))
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return scrub.URL(v1), resp.StatusCode == http.StatusOK
}

// parseModels reads the ids of a /models listing b (from where).
func (c *Client) parseModels(b []byte, where string) ([]string, error) {
	var p fastjson.Parser
	v, err := p.ParseBytes(b)
	if err != nil {
		return nil, fmt.Errorf("listing models at %s: not JSON: %s", where, scrub.Text(err.Error(), 200))
	}
	ids := make([]string, 0, 8)
	for _, m := range v.GetArray("data") {
		id := string(m.GetStringBytes("id"))
		if err := c.checkModel(id); err != nil {
			return nil, fmt.Errorf("listing models at %s: %w (pass --model)", where, err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// errModelID is a model id a server named that spate does not keep.
var errModelID = errors.New("model id")

// checkModel refuses a model id over the limit or with characters that
// are not printable text.
func (c *Client) checkModel(id string) error {
	if n := int64(len(id)); n > c.maxModelID() {
		return fmt.Errorf("%w of %d bytes is over the modelId limit of %d bytes (raise it with --limit modelId=SIZE)", errModelID, n, c.maxModelID())
	}
	if clean := scrub.Text(id, 0); clean != id {
		return fmt.Errorf("%w %q is not printable text", errModelID, clean)
	}
	return nil
}

// DefaultMaxModelID bounds a model id (Config.MaxModelID).
const DefaultMaxModelID = 1 << 10

func (c *Client) maxModelID() int64 {
	if c.cfg.MaxModelID > 0 {
		return c.cfg.MaxModelID
	}
	return DefaultMaxModelID
}

// Server is what the last model listing's answer (Models, Check) said of
// the server, as spate doctor reads it; nil before one was answered.
func (c *Client) Server() *result.ServerInfo { return c.listing.Load() }

// Traps are the known traps the server's answer to the model listing
// shows for this client's settings, each a warning for the result: an
// Ollama server ignores ignore_eos, so with it sent, every answer the
// model ends early would count as truncated and its missing tokens as
// dropped.
func (c *Client) Traps() []string {
	in := c.Server()
	if in == nil {
		return nil
	}
	var w []string
	if in.Software == "Ollama" && c.cfg.IgnoreEOS {
		w = append(w, fmt.Sprintf("the server is Ollama (%s), which ignores ignore_eos: answers that end before max_tokens count as truncated and their missing tokens as dropped; pass --ignore-eos false (docs/servers.md)", in.Evidence))
	}
	return w
}

// Check fails when the target is unreachable, or lacks the /v1 its
// server lists models under (every request would be a 404). A server
// that does not list its models (an HTTP error on /models) is reachable.
func (c *Client) Check(ctx context.Context) error {
	_, err := c.Models(ctx)
	if err != nil && (errors.Is(err, ErrUnreachable) || strings.Contains(err.Error(), "unreachable") || errors.Is(err, ErrTargetWithoutV1)) {
		return err
	}
	return nil
}

// getModels sends GET to a models listing with the target's headers and
// key.
func (c *Client) getModels(ctx context.Context, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range c.cfg.Headers {
		req.Header[k] = v
	}
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	return c.http.Do(req)
}
