package openai

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/spate-dev/spate/internal/workload"
)

// failingRemote is a server's tokenizer (--tokenizer server) whose
// endpoint fails.
type failingRemote struct{}

func (failingRemote) Count(string) int { return 0 }
func (failingRemote) CountContext(context.Context, string) (int, error) {
	return 0, errors.New("tokenize endpoint: HTTP 503")
}
func (failingRemote) Name() string { return "server:fake" }
func (failingRemote) Remote() bool { return true }

// TestRemoteCountFailureKeepsTheRequest: when the server's tokenize
// endpoint fails to count a sampled response, the response stays a
// success with its count unknown; it is not the request's failure.
func TestRemoteCountFailureKeepsTheRequest(t *testing.T) {
	srv := httptest.NewServer(script(regular(0, 0, 4, true)...))
	defer srv.Close()
	c := newClient(t, srv.URL, func(cfg *Config) { cfg.Tokenizer = failingRemote{} })
	rec := do(c, &workload.Request{Prompt: "p", MaxTokens: 4})
	if rec.Failed() {
		t.Fatalf("the request failed: %+v", rec)
	}
	if rec.TokenizerTokens != -1 || rec.OutputTokens != 4 {
		t.Errorf("tokenizer tokens %d, output tokens %d; want -1 (unknown) and the usage's 4", rec.TokenizerTokens, rec.OutputTokens)
	}
}
