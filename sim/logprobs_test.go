package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

// entropyOf is the entropy (nats) of a top list's probabilities.
func entropyOf(lps []float64) (h, mass float64) {
	for _, lp := range lps {
		p := math.Exp(lp)
		mass += p
		if p > 0 {
			h -= p * lp
		}
	}
	return h, mass
}

func TestPlantedLogprobs(t *testing.T) {
	for _, n := range []int{2, 5, 20} {
		for _, h := range []float64{0, 0.01, 0.5, 1.2, 2.0, 2.9, 5} {
			lps := plantedLogprobs(n, h)
			got, mass := entropyOf(lps)
			want := min(h, math.Log(float64(n)))
			if math.Abs(got-want) > 1e-9 || math.Abs(mass-1) > 1e-12 {
				t.Errorf("n %d h %v: entropy %v mass %v, want %v and 1", n, h, got, mass, want)
			}
			for i := 1; i < n; i++ {
				if lps[i] > lps[i-1] {
					t.Fatalf("n %d h %v: not most likely first: %v", n, h, lps)
				}
			}
		}
	}
	if lps := plantedLogprobs(1, 2); len(lps) != 1 || lps[0] != 0 {
		t.Errorf("one token: %v", lps)
	}
}

func TestParseEntropy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Entropy
	}{{"1.2", Entropy{PerTurn: []float64{1.2}}}, {"0.5, 1,1.5", Entropy{PerTurn: []float64{0.5, 1, 1.5}}}, {"uniform:0.2:2", Entropy{Lo: 0.2, Hi: 2}}} {
		e, err := ParseEntropy(tc.in)
		if err != nil || fmt.Sprint(e) != fmt.Sprint(tc.want) {
			t.Errorf("ParseEntropy(%q) = %+v, %v", tc.in, e, err)
		}
		if again, err := ParseEntropy(e.String()); err != nil || fmt.Sprint(again) != fmt.Sprint(e) {
			t.Errorf("%q reads back %+v, %v", e.String(), again, err)
		}
	}
	for _, bad := range []string{"", "-1", "x", "1,,2", "uniform:2:1", "uniform:1", "NaN"} {
		if _, err := ParseEntropy(bad); err == nil {
			t.Errorf("ParseEntropy(%q) accepted", bad)
		}
	}
}

func FuzzParseEntropy(f *testing.F) {
	for _, s := range []string{"1.2", "0.5,1,1.5", "uniform:0.2:2", "uniform:", ",", "1e400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEntropy(s)
		if err != nil {
			return
		}
		again, err := ParseEntropy(e.String())
		if err != nil || fmt.Sprint(again) != fmt.Sprint(e) {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, e, e.String(), again, err)
		}
		for turn := range 3 {
			if h := e.target(1, 2, turn); h < 0 || math.IsNaN(h) {
				t.Fatalf("%q: target %v", s, h)
			}
		}
	})
}

// chunkLogprobs is the part of a chat or completions chunk with logprobs.
type chunkLogprobs struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		Text     string `json:"text"`
		Logprobs *struct {
			Content []struct {
				Token       string  `json:"token"`
				Logprob     float64 `json:"logprob"`
				TopLogprobs []struct {
					Token   string  `json:"token"`
					Logprob float64 `json:"logprob"`
				} `json:"top_logprobs"`
			} `json:"content"`
			Tokens      []string             `json:"tokens"`
			TopLogprobs []map[string]float64 `json:"top_logprobs"`
		} `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

// tokenEntropies reads every data event of a body (streamed, or one whole
// JSON response) and returns each token's entropy from its top logprobs,
// checking that the sampled token heads its list.
func tokenEntropies(t *testing.T, body []byte, chat bool) []float64 {
	t.Helper()
	var events [][]byte
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		events = [][]byte{body}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok && string(d) != "[DONE]" {
				events = append(events, append([]byte(nil), d...))
			}
		}
	}
	var hs []float64
	for _, ev := range events {
		var c chunkLogprobs
		if err := json.Unmarshal(ev, &c); err != nil {
			t.Fatalf("event %s: %v", ev, err)
		}
		for _, ch := range c.Choices {
			if ch.Logprobs == nil {
				continue
			}
			if chat {
				for _, e := range ch.Logprobs.Content {
					var lps []float64
					for i, tl := range e.TopLogprobs {
						if i == 0 && (tl.Token != e.Token || tl.Logprob != e.Logprob) {
							t.Fatalf("the sampled token %q does not head its list %+v", e.Token, e.TopLogprobs)
						}
						lps = append(lps, tl.Logprob)
					}
					h, _ := entropyOf(lps)
					hs = append(hs, h)
				}
				continue
			}
			for i, top := range ch.Logprobs.TopLogprobs {
				if _, ok := top[ch.Logprobs.Tokens[i]]; !ok {
					t.Fatalf("token %q not in its top map %v", ch.Logprobs.Tokens[i], top)
				}
				var lps []float64
				for _, lp := range top {
					lps = append(lps, lp)
				}
				h, _ := entropyOf(lps)
				hs = append(hs, h)
			}
		}
	}
	return hs
}

// TestLogprobsPlantedPerTurn asks for 20 top logprobs of chat turns 1, 2
// and 3 (0, 1 and 2 assistant messages before) and of completions,
// streamed and whole, with --logprobs-entropy 0.4,1.1,2.3: every token's
// entropy is its turn's.
func TestLogprobsPlantedPerTurn(t *testing.T) {
	cfg := Deterministic(time.Millisecond, time.Millisecond, 6)
	e, _ := ParseEntropy("0.4,1.1,2.3")
	cfg.Entropy = &e
	_, url := startServer(t, cfg)
	c := newClient(2)
	history := `{"role":"user","content":"hi"}`
	for turn, want := range []float64{0.4, 1.1, 2.3, 2.3} {
		for _, stream := range []bool{true, false} {
			body := fmt.Sprintf(`{"model":"m","messages":[%s],"logprobs":true,"top_logprobs":20,"stream":%v}`, history, stream)
			code, _, b := post(t, c, url+"/v1/chat/completions", body)
			if code != 200 {
				t.Fatalf("turn %d: HTTP %d %s", turn+1, code, b)
			}
			hs := tokenEntropies(t, b, true)
			if len(hs) != 6 {
				t.Fatalf("turn %d stream %v: %d tokens with logprobs, want 6", turn+1, stream, len(hs))
			}
			for _, h := range hs {
				if math.Abs(h-want) > 1e-9 {
					t.Fatalf("turn %d stream %v: token entropy %v, want %v", turn+1, stream, h, want)
				}
			}
		}
		history += `,{"role":"assistant","content":"ok"},{"role":"user","content":"more"}`
	}
	for _, stream := range []bool{true, false} {
		code, _, b := post(t, c, url+"/v1/completions", fmt.Sprintf(`{"model":"m","prompt":"hi","logprobs":5,"stream":%v}`, stream))
		if code != 200 {
			t.Fatalf("completions: HTTP %d %s", code, b)
		}
		hs := tokenEntropies(t, b, false)
		if len(hs) != 6 || math.Abs(hs[0]-0.4) > 1e-9 {
			t.Fatalf("completions stream %v: entropies %v, want six of 0.4", stream, hs)
		}
	}
	// No logprobs asked: none sent.
	_, _, b := post(t, c, url+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`)
	if hs := tokenEntropies(t, b, true); len(hs) != 0 || !bytes.Contains(b, []byte(`"logprobs":null`)) {
		t.Fatalf("logprobs sent unasked: %s", b)
	}
}

func TestLogprobsRequestErrors(t *testing.T) {
	_, url := startServer(t, Deterministic(0, 0, 2))
	c := newClient(1)
	for _, tc := range []struct {
		path, body, want string
	}{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"top_logprobs":3}`, "when using `top_logprobs`, `logprobs` must be set to true."},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21}`, "Requested sample logprobs of 21, which is greater than max allowed: 20"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"logprobs":3}`, "logprobs must be a boolean."},
		{"/v1/completions", `{"prompt":"x","logprobs":-1}`, "`logprobs` must be a positive value."},
		{"/v1/completions", `{"prompt":"x","logprobs":true}`, "`logprobs` must be a positive value."},
	} {
		code, _, b := post(t, c, url+tc.path, tc.body)
		if code != http.StatusBadRequest || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: HTTP %d %s, want 400 %q", tc.body, code, b, tc.want)
		}
	}
}

// TestLengthFault cuts 30 % of 400 answers of 20 tokens short with
// finish_reason "length", seeded: the same requests every time.
func TestLengthFault(t *testing.T) {
	cfg := Deterministic(0, 0, 0)
	cfg.Faults.LengthRate = 0.3
	_, url := startServer(t, cfg)
	c := newClient(1)
	cut := 0
	for i := range 400 {
		stream := i%2 == 0
		code, _, b := post(t, c, url+"/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":"x"}],"max_tokens":20,"ignore_eos":true,"stream":%v,"stream_options":{"include_usage":true}}`, stream))
		if code != 200 {
			t.Fatalf("HTTP %d %s", code, b)
		}
		var tokens int
		var finish string
		if stream {
			r := parseSSE(t, b)
			tokens, finish = r.usage.CompletionTokens, r.finish
		} else {
			var w chatResponse
			if err := json.Unmarshal(b, &w); err != nil {
				t.Fatal(err)
			}
			tokens, finish = w.Usage.CompletionTokens, w.Choices[0].FinishReason
		}
		if finish != "length" {
			t.Fatalf("finish %q, want length (ignore_eos)", finish)
		}
		if tokens < 20 {
			cut++
			if tokens < 1 {
				t.Fatalf("%d tokens", tokens)
			}
		}
	}
	// 30 % of 400 with the seed's draws: 120 ± 3σ (σ ≈ 9.2).
	if cut < 92 || cut > 148 {
		t.Errorf("%d of 400 answers cut short, want about 120", cut)
	}
	t.Logf("%d of 400 answers cut short at length rate 0.3", cut)
}

// parseSSE reads a whole streamed body: its usage and last finish_reason.
func parseSSE(t *testing.T, b []byte) sseResult {
	t.Helper()
	var r sseResult
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok || string(d) == "[DONE]" {
			continue
		}
		var ev sseEvent
		if err := json.Unmarshal(d, &ev); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if ev.Usage != nil {
			r.usage = ev.Usage
		}
		for _, ch := range ev.Choices {
			if ch.FinishReason != nil {
				r.finish = *ch.FinishReason
			}
		}
	}
	return r
}

var _ = io.EOF
