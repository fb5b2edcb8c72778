package doctor

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/spate-dev/spate/internal/client/rawhttp"
	"github.com/spate-dev/spate/internal/metrics/observe"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/internal/serverinfo"
)

// models lists the models (GET /models): the server, HTTP version and
// clock come from this answer. A target without its /v1 is corrected when
// /v1/models lists models. It fails only when no answer came.
func (c *checker) models(ctx context.Context) error {
	a := c.do(ctx, http.MethodGet, c.endpoint("/models"), nil)
	if a.err != nil && a.resp == nil {
		if u, err := url.Parse(c.api); err == nil && u.Scheme == "http" && rawhttp.SpeaksHTTP2(ctx, u.Host, c.cfg.Timeout) {
			c.sent++
			return fmt.Errorf("target %s: the server speaks HTTP/2 only (over cleartext); spate speaks HTTP/1.1: enable HTTP/1.1 on the server, or put a proxy that speaks both in front of it", c.report.Target)
		}
		return fmt.Errorf("%w: target %s: %s", ErrUnreachable, c.report.Target, a.message())
	}
	if a.status() == http.StatusNotFound && !strings.HasSuffix(c.api, "/v1") {
		if b := c.do(ctx, http.MethodGet, c.api+"/v1/models", nil); b.status() == http.StatusOK {
			c.api += "/v1"
			c.report.Target = scrub.URL(c.api)
			c.flag("--target "+c.report.Target, "the target lacks /v1: its /models answers 404 where /v1/models lists models")
			a = b
		}
	}
	if a.status() != http.StatusOK {
		c.find("models", Unknown, "GET /models: %s (pass --model)", a.message())
		c.report.Server = serverinfo.Read(a.resp, nil, "", a.sent, a.got)
		c.server = c.report.Server.Software
		c.report.Model = c.cfg.Model
		c.serverFindings()
		return nil
	}
	var p fastjson.Parser
	v, err := p.ParseBytes(a.body)
	if err == nil {
		for _, m := range v.GetArray("data") {
			if id := string(m.GetStringBytes("id")); id != "" && len(c.report.Models) < 100 {
				c.report.Models = append(c.report.Models, scrub.Text(id, 200))
			}
		}
	}
	model := c.cfg.Model
	switch {
	case len(c.report.Models) == 0:
		c.find("models", Warn, "GET /models lists none (pass --model)")
	case model == "":
		model = c.report.Models[0]
		c.find("models", OK, "%s", listed(c.report.Models))
		if len(c.report.Models) > 1 {
			// With one, spate run finds it by itself.
			c.flag("--model "+model, "the first model listed; the check asked it")
		}
	case !contains(c.report.Models, model):
		c.find("models", Warn, "%q is not listed; %s", model, listed(c.report.Models))
	default:
		c.find("models", OK, "%s", listed(c.report.Models))
	}
	c.report.Model = model
	c.report.Server = serverinfo.Read(a.resp, a.body, model, a.sent, a.got)
	c.server = c.report.Server.Software
	c.serverFindings()
	return nil
}

// serverFindings reports what the listing's answer said of the server:
// its software, HTTP version and clock.
func (c *checker) serverFindings() {
	in := c.report.Server
	if in.Software != "" {
		c.find("server", OK, "%s (%s)", in.Software, in.Evidence)
	} else {
		c.find("server", Unknown, "neither its Server header nor the listing's owned_by names it")
	}
	switch {
	case in.HTTP == "HTTP/1.1":
		c.find("http", OK, "HTTP/1.1")
	case strings.HasPrefix(in.HTTP, "HTTP/2"):
		c.find("http", OK, "%s, negotiated over TLS with this check; spate run's requests speak HTTP/1.1, which the server must accept too", in.HTTP)
	default:
		c.find("http", Unknown, "%s", in.HTTP)
	}
	st := OK
	if in.ClockOffsetS == nil {
		st = Unknown
	}
	c.find("clock", st, "%s", in.Clock())
}

func listed(ids []string) string {
	if len(ids) <= 3 {
		return strings.Join(ids, ", ") + fmt.Sprintf(" (%d listed)", len(ids))
	}
	return strings.Join(ids[:3], ", ") + fmt.Sprintf(", … (%d listed)", len(ids))
}

func contains(ids []string, id string) bool {
	for _, s := range ids {
		if s == id {
			return true
		}
	}
	return false
}

// context reports the model's context length: the listing's, and
// llama.cpp's per slot (GET /props) when the server is llama.cpp.
func (c *checker) context(ctx context.Context) {
	in := c.report.Server
	detail := ""
	if in.MaxContext > 0 {
		detail = fmt.Sprintf("%d tokens (%s)", in.MaxContext, in.MaxContextFrom)
	}
	if c.server == "llama.cpp" {
		if a := c.do(ctx, http.MethodGet, c.root()+"/props", nil); a.status() == http.StatusOK {
			var p fastjson.Parser
			if v, err := p.ParseBytes(a.body); err == nil {
				if n := v.GetInt("default_generation_settings", "n_ctx"); n > 0 {
					if detail != "" {
						detail += "; "
					}
					detail += fmt.Sprintf("%d per slot, %d slots (/props n_ctx, total_slots): a prompt and its answer must fit in a slot's", n, v.GetInt("total_slots"))
				}
			}
		}
	}
	if detail == "" {
		c.find("context", Unknown, "the listing gives no context length")
		return
	}
	c.find("context", OK, "%s", detail)
}

// endpoints asks the other APIs spate drives with a request each of one
// token (or one input): present or not.
func (c *checker) endpoints(ctx context.Context) {
	m := c.report.Model
	comp := c.do(ctx, http.MethodPost, c.endpoint("/completions"), map[string]any{"model": m, "prompt": "Hello", "max_tokens": 1})
	c.present("completions", comp)
	if !c.chatOK && comp.status() == http.StatusOK {
		c.flag("--api completions", "chat did not answer a stream; completions did")
	}
	c.present("responses", c.do(ctx, http.MethodPost, c.endpoint("/responses"), map[string]any{"model": m, "input": "Hello", "max_output_tokens": 16}))
	c.present("embeddings", c.do(ctx, http.MethodPost, c.endpoint("/embeddings"), map[string]any{"model": m, "input": "Hello"}))
	c.present("rerank", c.do(ctx, http.MethodPost, c.endpoint("/rerank"), map[string]any{"model": m, "query": "sea", "documents": []string{"the sea", "a hill"}}))
}

// present reports an endpoint from its answer.
func (c *checker) present(check string, a answer) {
	switch {
	case a.status() == http.StatusOK:
		c.find(check, OK, "yes")
	case a.served():
		c.find(check, OK, "yes, but it refused the check's request: %s", a.message())
	case a.resp != nil:
		c.find(check, No, "no (%s)", a.message())
	default:
		c.find(check, Unknown, "%s", a.message())
	}
}

// tokenize looks for a tokenize endpoint at the server's root in
// llama.cpp's shape ({"content": …} → {"tokens": […]}) and then vLLM's
// ({"model": …, "prompt": …} → {"count": N, "tokens": […]}).
func (c *checker) tokenize(ctx context.Context) {
	const text = "Hello world, how are you?"
	u := c.root() + "/tokenize"
	try := []struct {
		shape string
		body  map[string]any
	}{
		{"llama.cpp", map[string]any{"content": text}},
		{"vLLM", map[string]any{"model": c.report.Model, "prompt": text}},
	}
	var last answer
	for _, t := range try {
		last = c.do(ctx, http.MethodPost, u, t.body)
		if last.status() != http.StatusOK {
			if !last.served() {
				break // no endpoint: the other shape would 404 as well
			}
			continue
		}
		var p fastjson.Parser
		v, err := p.ParseBytes(last.body)
		if err != nil || v.Get("tokens") == nil {
			continue
		}
		c.find("tokenize", OK, "yes, in %s's shape, at %s", t.shape, scrub.URL(u))
		c.flag("--tokenizer server", "count and build prompts in the model's own tokens (its /tokenize)")
		return
	}
	c.find("tokenize", No, "no (%s); prompt lengths are counted with a local tokenizer (--tokenizer)", last.message())
}

// metrics scrapes the server's root /metrics once and names the known
// servers whose metrics it carries.
func (c *checker) metrics(ctx context.Context) {
	u := c.root() + "/metrics"
	c.sent++
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	names, n, err := observe.Identify(ctx, c.cfg.Client, u)
	switch {
	case err != nil:
		c.find("metrics", No, "no (%s)", scrub.Text(err.Error(), 160))
	case len(names) == 0:
		c.find("metrics", Warn, "%d metric families at %s, none of a server spate knows (docs/observability.md); keep some with --scrape-metric", n, scrub.URL(u))
	default:
		c.find("metrics", OK, "%s metrics (%d families) at %s", strings.Join(names, ", "), n, scrub.URL(u))
		c.flag("--scrape "+scrub.URL(u), "the server's own queue, KV-cache and token rates on the run's timeline")
	}
}

// health asks the server's root /health.
func (c *checker) health(ctx context.Context) {
	a := c.do(ctx, http.MethodGet, c.root()+"/health", nil)
	switch {
	case a.status() == http.StatusOK:
		c.find("health", OK, "/health answers 200")
	case a.resp != nil:
		c.find("health", No, "/health: %s", a.message())
	default:
		c.find("health", Unknown, "/health: %s", a.message())
	}
}
