package openai

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/sim"
)

// TestTailEntropy checks the tail-bucket estimate on lists whose entropy
// is known: a whole distribution (no tail), a cut one (a lower bound
// within its bound), duplicates and OpenAI's −9999.
func TestTailEntropy(t *testing.T) {
	ln := math.Log
	for _, tc := range []struct {
		name    string
		lps     []float64
		h, tail float64
	}{
		{"uniform over 4", []float64{ln(.25), ln(.25), ln(.25), ln(.25)}, ln(4), 0},
		{"certain", []float64{0}, 0, 0},
		{"half and a tail", []float64{ln(.5), ln(.25)}, -.5*ln(.5) - .25*ln(.25) - .25*ln(.25), .25},
		{"very unlikely counts 0", []float64{ln(.5), ln(.5), -9999}, ln(2), 0},
	} {
		h, r := tailEntropy(tc.lps)
		if math.Abs(h-tc.h) > 1e-9 || math.Abs(r-tc.tail) > 1e-9 {
			t.Errorf("%s: H %.6f tail %.6f, want %.6f %.6f", tc.name, h, r, tc.h, tc.tail)
		}
	}
	// The true distribution: 0.5, 0.25 and 25 tokens of 0.01; the top 2
	// give a lower bound no further below than the bound.
	truth := -.5*ln(.5) - .25*ln(.25) - 25*.01*ln(.01)
	var a entropyAcc
	a.begin()
	a.add([]byte("a"), ln(.5))
	a.add([]byte("b"), ln(.25))
	a.add([]byte("a"), ln(.5)) // vLLM may list the sampled token twice
	a.end()
	rec := &record.Record{}
	a.fill(rec)
	if rec.EntropyTokens != 1 || rec.Entropy > truth || truth-rec.Entropy > rec.EntropyBound || math.Abs(rec.TailMass-.25) > 1e-9 {
		t.Errorf("estimate %.4f (bound %.4f, tail %.3f, %d tokens) against the truth %.4f", rec.Entropy, rec.EntropyBound, rec.TailMass, rec.EntropyTokens, truth)
	}
}

// TestReadLogprobsShapes reads chat's and completions' logprobs objects.
func TestReadLogprobsShapes(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		n          int
		h          float64
	}{
		{"chat", `{"content":[{"token":"a","logprob":-0.6931471805599453,"top_logprobs":[{"token":"a","logprob":-0.6931471805599453},{"token":"b","logprob":-0.6931471805599453}]},{"token":"c","logprob":0,"top_logprobs":[]}],"refusal":null}`, 1, math.Ln2},
		{"completions", `{"tokens":["a","b"],"token_logprobs":[-0.69,-0.69],"top_logprobs":[{"a":-0.6931471805599453,"b":-0.6931471805599453},null,{"x":0}]}`, 2, math.Ln2 / 2},
		{"null content", `{"content":null}`, 0, 0},
	} {
		var p fastjson.Parser
		v, err := p.Parse(tc.json)
		if err != nil {
			t.Fatal(err)
		}
		var a entropyAcc
		a.readLogprobs(v)
		rec := &record.Record{}
		a.fill(rec)
		if rec.EntropyTokens != tc.n || math.Abs(rec.Entropy-tc.h) > 1e-9 {
			t.Errorf("%s: %d tokens, mean entropy %.6f; want %d, %.6f", tc.name, rec.EntropyTokens, rec.Entropy, tc.n, tc.h)
		}
	}
}

// TestLogprobsAndFinishFromSim asks the simulator for top logprobs with a
// planted entropy on every path (chat and completions, streamed and whole,
// the reactor and net/http) and recovers the entropy, the token count and
// the finish reason; under its length fault the answers end with
// finish_reason length and fewer tokens than asked.
func TestLogprobsAndFinishFromSim(t *testing.T) {
	cfg := sim.Deterministic(time.Millisecond, 0, 12)
	cfg.Entropy = &sim.Entropy{PerTurn: []float64{1.2}}
	s, err := sim.Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cut := sim.Deterministic(time.Millisecond, 0, 12)
	cut.Faults.LengthRate = 1
	sc, err := sim.Start(cut, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	for _, api := range []string{Chat, Completions} {
		for _, stream := range []bool{true, false} {
			for _, nethttp := range []bool{false, true} {
				name := api
				if stream {
					name += "/stream"
				}
				if nethttp {
					name += "/nethttp"
				}
				t.Run(name, func(t *testing.T) {
					c := newClient(t, strings.TrimSuffix(s.URL, "/v1"), func(c *Config) {
						c.API, c.Stream, c.NetHTTP, c.Logprobs, c.Model = api, stream, nethttp, 5, sim.DefaultModel
					})
					rec := &record.Record{}
					rec.Reset()
					c.Do(context.Background(), &workload.Request{Prompt: "hello there", MaxTokens: 12}, rec)
					if rec.Failed() {
						t.Fatalf("%s: %s", rec.Err, rec.ErrMsg)
					}
					if rec.EntropyTokens != 12 || math.Abs(rec.Entropy-1.2) > 1e-6 || rec.TailMass > 1e-9 {
						t.Errorf("entropy %.6f over %d tokens (tail %.2g), want 1.2 over 12 and no tail", rec.Entropy, rec.EntropyTokens, rec.TailMass)
					}
					if rec.FinishReason != "length" { // 12 tokens of 12 asked: the cap ended it
						t.Errorf("finish_reason %q, want length", rec.FinishReason)
					}
					// The length fault: cut short of the 12 asked, exactly.
					c = newClient(t, strings.TrimSuffix(sc.URL, "/v1"), func(c *Config) {
						c.API, c.Stream, c.NetHTTP, c.IgnoreEOS, c.Model = api, stream, nethttp, true, sim.DefaultModel
					})
					rec.Reset()
					c.Do(context.Background(), &workload.Request{Prompt: "hello there", MaxTokens: 12}, rec)
					if rec.Failed() || rec.FinishReason != "length" || rec.OutputTokens >= 12 || !rec.ExactOutput || rec.EntropyTokens != 0 {
						t.Errorf("length fault: %s %s, finish_reason %q, %d tokens of 12, exact %v, %d entropy tokens",
							rec.Err, rec.ErrMsg, rec.FinishReason, rec.OutputTokens, rec.ExactOutput, rec.EntropyTokens)
					}
				})
			}
		}
	}
}

// TestLogprobsBody checks the fields asking for logprobs on each API.
func TestLogprobsBody(t *testing.T) {
	for _, tc := range []struct {
		api      string
		cfg, req int
		want     string
	}{
		{Chat, 5, 0, `"logprobs":true,"top_logprobs":5`},
		{Chat, 5, 30, `"logprobs":true,"top_logprobs":20`},
		{Completions, 0, 3, `"logprobs":3}`},
		{Chat, 0, 0, `"stream_options":{"include_usage":true}}`},
	} {
		c := newClient(t, "http://127.0.0.1:1", func(c *Config) { c.API, c.Logprobs = tc.api, tc.cfg })
		b, err := c.Body(&workload.Request{Prompt: "hi", Logprobs: tc.req})
		if err != nil || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s cfg %d req %d: body %s (%v), want it to hold %s", tc.api, tc.cfg, tc.req, b, err, tc.want)
		}
	}
}

// FuzzReadLogprobs feeds any JSON as a choice's logprobs: the reader never
// panics, and every estimate is a finite entropy ≥ 0 with a tail in [0, 1]
// and a bound ≥ 0.
func FuzzReadLogprobs(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"token":"a","logprob":-0.1,"top_logprobs":[{"token":"a","logprob":-0.1},{"token":"b","logprob":-2.5}]}]}`,
		`{"top_logprobs":[{"a":-0.7,"b":-0.7},null,{}]}`,
		`{"content":[{"top_logprobs":[{"token":"a","logprob":5},{"token":"a","logprob":-1e309}]}]}`,
		`{"content":null}`, `[]`, `{"top_logprobs":[{"x":"y"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p fastjson.Parser
		v, err := p.ParseBytes(data)
		if err != nil {
			return
		}
		var a entropyAcc
		a.readLogprobs(v)
		rec := &record.Record{}
		a.fill(rec)
		if math.IsNaN(rec.Entropy) || math.IsInf(rec.Entropy, 0) || rec.Entropy < 0 || rec.TailMass < 0 || rec.TailMass > 1 ||
			rec.EntropyBound < 0 || math.IsNaN(rec.EntropyBound) {
			t.Fatalf("%s: entropy %v tail %v bound %v over %d tokens", data, rec.Entropy, rec.TailMass, rec.EntropyBound, rec.EntropyTokens)
		}
	})
}
