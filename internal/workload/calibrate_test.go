package workload_test

import (
	"context"
	"strings"
	"testing"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/internal/workload/tokenizer"
	"github.com/spate-dev/spate/llmtest"
)

// TestCalibrateServerTokens: against a tokenize endpoint whose vocabulary
// cuts words unlike cl100k (llmtest.PieceTokens: a dummy-prefix token and
// 1 to 3 tokens a word), in llama.cpp's shape and in vLLM's, 500 synthetic
// prompts of 200 asked tokens are 200 ± 1 % of the server's tokens, built
// with a bounded number of tokenize requests; the cl100k words miss.
func TestCalibrateServerTokens(t *testing.T) {
	for _, tc := range []struct {
		shape  string
		probes int64 // requests DialServer sends to find the shape
	}{
		{llmtest.TokenizeLlamaCpp, 1},
		{llmtest.TokenizeVLLM, 2},
	} {
		t.Run(tc.shape, func(t *testing.T) {
			srv := llmtest.NewServer(llmtest.Config{Tokenize: tc.shape})
			defer srv.Close()
			ctx := context.Background()
			tok, err := tokenizer.DialServer(ctx, tokenizer.ServerConfig{Name: "server", Target: srv.BaseURL(), Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			if got := srv.TokenizeCalls(); got != tc.probes {
				t.Errorf("finding the endpoint took %d requests, want %d", got, tc.probes)
			}
			if want := "server:" + srv.URL + "/tokenize"; tok.Name() != want {
				t.Errorf("Name() = %q, want %q", tok.Name(), want)
			}
			v, err := workload.Calibrate(ctx, tok)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("head %q of %d tokens, %d words kept", v.Head, v.HeadTokens, len(v.Words))
			in, _ := workload.ParseLengths("200")
			both := []struct {
				name  string
				vocab *workload.Vocab
			}{{"server", v}, {"cl100k", nil}}
			for _, b := range both {
				src := workload.Synthetic{Input: in, Seed: 7, Vocab: b.vocab}
				off, sum := 0, 0
				for n := uint64(0); n < 500; n++ {
					r, err := src.Request(n)
					if err != nil {
						t.Fatal(err)
					}
					got := len(llmtest.PieceTokens(r.Prompt))
					sum += got
					if got < 198 || got > 202 {
						off++
						if b.vocab != nil {
							t.Fatalf("prompt %d of 200 asked tokens is %d of the server's tokens (InputTokens %d)", n, got, r.InputTokens)
						}
					}
					if b.vocab != nil && r.InputTokens != 200 {
						t.Fatalf("prompt %d: InputTokens %d, want 200", n, r.InputTokens)
					}
				}
				t.Logf("%s words: 500 prompts of 200 asked tokens are %.1f of the server's tokens on average, %d off by over 1 %%", b.name, float64(sum)/500, off)
				if b.vocab == nil && off < 450 {
					t.Errorf("cl100k's one-token words: only %d of 500 prompts off by over 1 %% in the server's tokens; the fake vocabulary is too like cl100k", off)
				}
			}
			if got, max := srv.TokenizeCalls(), tc.probes+workload.CalibrationRequests; got > max {
				t.Errorf("%d tokenize requests for 500 prompts, want at most %d", got, max)
			}
		})
	}
}

// TestCalibrateSharedPrefix: a prompt with a shared prefix has its asked
// tokens in the server's counts too (the lead is counted once).
func TestCalibrateSharedPrefix(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{Tokenize: llmtest.TokenizeLlamaCpp})
	defer srv.Close()
	ctx := context.Background()
	tok, err := tokenizer.DialServer(ctx, tokenizer.ServerConfig{Name: "server", Target: srv.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	v, err := workload.Calibrate(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := workload.ParseLengths("300")
	src := workload.Synthetic{Input: in, Seed: 3, Vocab: v, Prefix: &experiment.SharedPrefix{Groups: 2, Tokens: 100, Ratio: 1}}
	for n := uint64(0); n < 50; n++ {
		r, err := src.Request(n)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(llmtest.PieceTokens(r.Prompt)); got < 297 || got > 303 {
			t.Fatalf("prompt %d of 300 asked tokens (100 shared) is %d of the server's tokens", n, got)
		}
	}
}

// fakeIDs is an in-process tokenizer for Calibrate: ids of text by f,
// counting the calls.
type fakeIDs struct {
	f     func(string) []int
	calls int
}

func (f *fakeIDs) Tokenize(_ context.Context, text string) ([]int, error) {
	f.calls++
	return f.f(text), nil
}
func (f *fakeIDs) Name() string { return "fake" }

// llama2Like writes a text's first word as Llama 2 does after its dummy
// prefix: "▁▁" then the word without its "▁" (two tokens when the bare
// word is not in the vocabulary: here, words of over 4 letters), and
// every later word as llmtest.PieceTokens does.
func llama2Like(text string) []int {
	ids := llmtest.PieceTokens(text)
	if len(ids) < 2 {
		return ids
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(text, " "), " ")
	n := len(llmtest.PieceTokens(" "+first)) - 1 // the word's own tokens
	bare := []int{-1}
	if len(first) > 4 {
		bare = append(bare, -2)
	}
	return append(append([]int{-9}, bare...), ids[1+n:]...)
}

// pairs cuts the whole text into pairs of bytes: a word's count depends
// on where it starts.
func pairs(text string) []int {
	var ids []int
	for i := 0; i < len(text); i += 2 {
		ids = append(ids, int(text[i])<<8|int(text[min(i+1, len(text)-1)]))
	}
	return ids
}

// TestCalibrateTokenizers: Calibrate learns a first word written unlike
// the others (Llama 2's "▁▁": prompts start with the one word whose count
// there it learnt, so they are exact), and refuses a tokenizer whose counts
// depend on the neighbours, within CalibrationRequests requests.
func TestCalibrateTokenizers(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(string) []int
		err  string
	}{
		{"piece", llmtest.PieceTokens, ""},
		{"llama2 first word", llama2Like, ""},
		{"pairs across words", pairs, "use a dataset, or a local tokenizer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeIDs{f: tc.f}
			v, err := workload.Calibrate(context.Background(), f)
			if f.calls > workload.CalibrationRequests {
				t.Errorf("%d requests, want at most %d", f.calls, workload.CalibrationRequests)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Calibrate = %v, want an error saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			in, _ := workload.ParseLengths("uniform:20:1000")
			src := workload.Synthetic{Input: in, Seed: 11, Vocab: v}
			for n := uint64(0); n < 200; n++ {
				r, _ := src.Request(n)
				got, want := len(tc.f(r.Prompt)), r.InputTokens
				if got != want {
					t.Fatalf("prompt %d of %d asked tokens is %d tokens", n, want, got)
				}
			}
		})
	}
}

// remoteCounter is a counter whose counts would be requests to a server.
type remoteCounter struct{ calls int }

func (c *remoteCounter) Count(s string) int { c.calls++; return len(s) / 4 }
func (c *remoteCounter) Name() string       { return "server:fake" }
func (c *remoteCounter) Remote() bool       { return true }

// TestRemoteCounterNotPerRequest: with a server's tokenizer, making the
// run's requests (mutated prompts, prompts cut to a context) asks it
// nothing: a request each would load the server under test.
func TestRemoteCounterNotPerRequest(t *testing.T) {
	tok := &remoteCounter{}
	b, err := workload.Build(experiment.Workload{InputTokens: "300", Constraints: "max_context=256", Mutate: "typo@0.5"},
		workload.BuildOptions{Seed: 1, Tokenizer: tok})
	if err != nil {
		t.Fatal(err)
	}
	for n := uint64(0); n < 50; n++ {
		if _, err := b.Source.Request(n); err != nil {
			t.Fatal(err)
		}
	}
	if tok.calls != 0 {
		t.Errorf("%d counts asked of the server while making 50 requests", tok.calls)
	}
}

// TestCalibratedDigest: prompts in a server's tokens have a workload
// digest of their own, the same for the same vocabulary behind another
// URL (the same prompts), unlike cl100k's.
func TestCalibratedDigest(t *testing.T) {
	var digests []string
	for range 2 {
		srv := llmtest.NewServer(llmtest.Config{Tokenize: llmtest.TokenizeLlamaCpp})
		tok, err := tokenizer.DialServer(context.Background(), tokenizer.ServerConfig{Name: "server", Target: srv.BaseURL()})
		if err != nil {
			t.Fatal(err)
		}
		v, err := workload.Calibrate(context.Background(), tok)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		in, _ := workload.ParseLengths("200")
		digests = append(digests, workload.Synthetic{Input: in, Seed: 1, Vocab: v}.Digest())
	}
	in, _ := workload.ParseLengths("200")
	local := workload.Synthetic{Input: in, Seed: 1}.Digest()
	if digests[0] != digests[1] || digests[0] == local {
		t.Errorf("digests: server %s, server on another port %s, cl100k %s", digests[0], digests[1], local)
	}
}
