package plan

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/llmtest"
)

// TestTokenizerServer: a run with --tokenizer server against a server
// whose /tokenize cuts words unlike cl100k (llmtest.PieceTokens, in
// llama.cpp's and in vLLM's shape) sends completions prompts (and chat
// messages' content) of 200 asked tokens that the server counts as
// 200 ± 1 %, asks /tokenize a bounded
// number of times, and records the tokenizer as server:<endpoint>; with
// cl100k (the default) the same prompts miss. A server without /tokenize
// stops the run before it starts, as a bad setting (exit 2).
func TestTokenizerServer(t *testing.T) {
	for _, tc := range []struct{ shape, tokenizer, api string }{
		{llmtest.TokenizeLlamaCpp, "server", "completions"},
		{llmtest.TokenizeVLLM, "server", "completions"},
		{llmtest.TokenizeVLLM, "server", "chat"}, // the user message's content
		{llmtest.TokenizeLlamaCpp, "cl100k_base", "completions"},
	} {
		t.Run(tc.shape+" "+tc.tokenizer+" "+tc.api, func(t *testing.T) {
			srv := llmtest.NewServer(llmtest.Config{Tokens: 2, Tokenize: tc.shape})
			defer srv.Close()
			x := &experiment.Experiment{
				Target:      experiment.Target{URL: srv.BaseURL(), Model: "m", API: tc.api},
				Workload:    experiment.Workload{InputTokens: "200"},
				Measurement: experiment.Measurement{Tokenizer: tc.tokenizer},
				Stages:      []experiment.Stage{{Name: "a", Concurrency: 4, Requests: 40}},
			}
			var stderr strings.Builder
			res, err := Execute(context.Background(), x, Env{Stderr: &stderr})
			if err != nil {
				t.Fatal(err)
			}
			if line := "tokenizer: " + srv.URL + "/tokenize in "; tc.tokenizer == "server" && !strings.Contains(stderr.String(), line) {
				t.Errorf("stderr lacks %q:\n%s", line, stderr.String())
			}
			t.Log(strings.SplitN(stderr.String(), "\n", 2)[0])
			prompts := srv.PromptTokens()
			if len(prompts) != 40 {
				t.Fatalf("%d prompts counted, want 40", len(prompts))
			}
			off := 0
			for _, n := range prompts {
				if n < 198 || n > 202 {
					off++
				}
			}
			if tc.tokenizer == "cl100k_base" {
				if off < 36 {
					t.Errorf("with cl100k only %d of 40 prompts missed 200 ± 1 %% of the server's tokens (%v)", off, prompts)
				}
				return
			}
			if off > 0 {
				t.Errorf("%d of 40 prompts of 200 asked tokens were not 200 ± 1 %% of the server's tokens: %v", off, prompts)
			}
			if want := "server:" + srv.URL + "/tokenize"; res.Provenance.Tokenizer != want {
				t.Errorf("provenance tokenizer %q, want %q", res.Provenance.Tokenizer, want)
			}
			// Finding the endpoint (2 tries at most), calibrating (at most
			// 7), and counting the output of every 16th request (3 of 40).
			t.Logf("%d tokenize requests", srv.TokenizeCalls())
			if got := srv.TokenizeCalls(); got > 2+7+3 {
				t.Errorf("%d tokenize requests, want at most 12", got)
			}
		})
	}
	t.Run("no endpoint", func(t *testing.T) {
		srv := llmtest.NewServer(llmtest.Config{Tokens: 2})
		defer srv.Close()
		x := &experiment.Experiment{
			Target:      experiment.Target{URL: srv.BaseURL(), Model: "m", API: "completions"},
			Measurement: experiment.Measurement{Tokenizer: "server"},
			Stages:      []experiment.Stage{{Name: "a", Concurrency: 1, Requests: 1}},
		}
		res, err := Execute(context.Background(), x, Env{})
		if err == nil || res != nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "--tokenizer: the target "+srv.BaseURL()+" has no tokenize endpoint") {
			t.Fatalf("Execute = %v, %v; want an ErrInvalid naming the target", res, err)
		}
		if srv.Requests() != 0 {
			t.Errorf("%d requests sent", srv.Requests())
		}
	})
}
