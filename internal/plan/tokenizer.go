package plan

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/internal/workload/tokenizer"
)

// loadTokenizer is the run's --tokenizer: a local one (whose words must
// each be one token when synthetic prompts are made), or the target's
// own through its tokenize endpoint, with the vocabulary synthetic
// prompts are then made of (workload.Calibrate).
func (r *Run) loadTokenizer(ctx context.Context) (tokenizer.Counter, *workload.Vocab, error) {
	x := r.X
	name := x.Measurement.Tokenizer
	synthetic := x.Workload.Dataset == "" && x.Target.API != "http"
	// A stage's own workload may be synthetic where the run's is not.
	anySynthetic := synthetic
	for _, st := range x.Stages {
		if st.Workload != nil && x.Workload.Merge(*st.Workload).Dataset == "" && x.Target.API != "http" {
			anySynthetic = true
		}
	}
	if !tokenizer.IsServer(name) {
		tok, err := tokenizer.LoadContext(ctx, name)
		if err != nil {
			return nil, nil, invalidf("--tokenizer: %v", err)
		}
		if tok.Name() != "cl100k_base" && synthetic {
			if err := workload.CheckVocab(tok, tok.Name()); err != nil {
				return nil, nil, invalidf("--tokenizer: %v", err)
			}
		}
		return tok, nil, nil
	}
	headers := http.Header{}
	for k, v := range x.Target.Headers {
		headers.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	srv, err := tokenizer.DialServer(ctx, tokenizer.ServerConfig{Name: name, Target: r.upstream(),
		Model: x.Target.Model, APIKey: x.Target.APIKey, Headers: headers})
	if err != nil {
		return nil, nil, settingOr(ctx, err)
	}
	if !anySynthetic {
		return srv, nil, nil
	}
	v, err := workload.Calibrate(ctx, srv)
	if err != nil {
		return nil, nil, settingOr(ctx, err)
	}
	if !r.quiet() {
		url, shape := srv.Endpoint()
		fmt.Fprintf(r.stderr(), "tokenizer: %s in %s's shape: synthetic prompts of %d of the %d words (those of 1 to 4 tokens), each starting with %q (%d token%s there); %d tokenize requests\n",
			scrub.URL(url), shape, len(v.Words), len(workload.OneTokenWords), v.Head, v.HeadTokens, map[bool]string{true: "s"}[v.HeadTokens != 1], srv.Requests())
	}
	return srv, v, nil
}

// settingOr is err of the server's tokenizer as a bad --tokenizer (exit
// 2), unless the run was stopped while it was asked.
func settingOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("--tokenizer: %w", err)
	}
	return invalidf("--tokenizer: %v", err)
}

// upstream is the target the user named: behind the chaos proxy, the
// proxy's upstream (tokenize requests are not the load, and the result
// names the server's endpoint, not the proxy's port).
func (r *Run) upstream() string {
	for _, f := range r.features {
		if c, ok := f.(*chaosFeature); ok && c.upstream != "" {
			return c.upstream
		}
	}
	return r.X.Target.URL
}
