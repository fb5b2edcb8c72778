package openai

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/scrub"
)

// FuzzSkimMatchesFastjson holds skim to the full parser: whatever chunk
// skim accepts, fastjson accepts too, with the same model, answer text,
// reasoning text and kinds of content.
func FuzzSkimMatchesFastjson(f *testing.F) {
	for _, s := range []string{
		`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
		`{"choices":[{"delta":{"reasoning_content":"hmm"}}]}`,
		`{"choices":[{"delta":{"reasoning":"r","content":"c"}}]}`,
		`{"choices":[{"text":"t","index":0}],"model":"m2"}`,
		`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
		`{"choices":[{"delta":{"tool_calls":[{"function":{"name":"f"}}]}}]}`,
		`{"error":{"message":"boom"}}`,
		`{"object":"error","message":"This model's maximum context length is 8 tokens","type":"BadRequestError","param":null,"code":400}`,
		`{"object":"chat.completion.chunk","choices":[{"delta":{"content":"x"}}],"object":"error"}`,
		`{"choices":[{"delta":null,"text":"x"}],"model":5,"model":"m"}`,
		`{"choices":[{"delta":{"content":"a\nb"}}]}`,
		`{"a":[1,-2.5e+3,true,false,null,{"b":[]}],"choices":[{"delta":{"content":"x","content":"y"}}]}`,
		` {"choices":[{"delta":{"content":"x"}}]} `,
		`{"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}`,
		`{"choices":[{"delta":{"content":"a"},"finish_reason":"stop","finish_reason":"length"},{"delta":{},"finish_reason":null}]}`,
		`{"choices":[{"delta":{"content":"a"},"logprobs":{"content":[{"token":"a","logprob":-0.1,"top_logprobs":[{"token":"a","logprob":-0.1}]}]}}]}`,
		`{"choices":[{"delta":{"content":"x"}}]}x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var sk chunkSkim
		if !skim(data, &sk) {
			return
		}
		st := &stream{}
		rec := &record.Record{}
		rec.Reset()
		reasoning, answer, err := (&Client{}).parseEvent(st, data, rec, true)
		// The skim path checks the model id the same way (Client.model):
		// a chunk both refuse is refused for the same reason.
		skimErr := (&Client{}).model(&record.Record{}, sk.model)
		if err != nil || skimErr != nil {
			if err == nil || skimErr == nil || err.Error() != skimErr.Error() {
				t.Fatalf("%q: skim's model check %v, fastjson %v", data, skimErr, err)
			}
			return
		}
		var text, ans []byte
		var r, a bool
		for _, p := range sk.parts {
			if len(p.answer) > 0 {
				a = true
				text = append(text, p.answer...)
				ans = append(ans, p.answer...)
			}
			if len(p.reasoning) > 0 {
				r = true
				text = append(text, p.reasoning...)
			}
		}
		// Both paths keep the model id through Client.model, escaped.
		model := ""
		if len(sk.model) > 0 {
			model = scrub.Text(string(sk.model), 0)
		}
		if string(sk.finish) != rec.FinishReason || st.ent.n != 0 {
			t.Fatalf("%q: skim finish_reason %q, fastjson %q (%d logprob positions)", data, sk.finish, rec.FinishReason, st.ent.n)
		}
		if r != reasoning || a != answer || !bytes.Equal(text, st.text) || !bytes.Equal(ans, rec.Answer) || model != rec.Model || rec.ToolCalls != 0 || rec.UsageTokens >= 0 {
			t.Fatalf("%q: skim r=%v a=%v text=%q answer=%q model=%q; fastjson r=%v a=%v text=%q answer=%q model=%q tools=%d usage=%d",
				data, r, a, text, ans, model, reasoning, answer, st.text, rec.Answer, rec.Model, rec.ToolCalls, rec.UsageTokens)
		}
	})
}

func BenchmarkSkim(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-27ceef8cb14bee2516a04b20a753228a","object":"chat.completion.chunk","created":1796141405,"model":"spate-sim","choices":[{"index":0,"delta":{"content":" would"},"logprobs":null,"finish_reason":null}]}`)
	b.Run("skim", func(b *testing.B) {
		var sk chunkSkim
		for b.Loop() {
			if !skim(data, &sk) {
				b.Fatal("not skimmed")
			}
		}
	})
	b.Run("fastjson", func(b *testing.B) {
		st := &stream{}
		rec := &record.Record{}
		for b.Loop() {
			rec.Reset()
			st.text = st.text[:0]
			if _, _, err := (&Client{}).parseEvent(st, data, rec, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestPlainStringEveryPosition puts a quote, a backslash, a control
// character, a high byte or DEL at every position of strings up to 24
// bytes long (the word-at-a-time scan's edges) and checks plainString
// against a byte-by-byte reading.
func TestPlainStringEveryPosition(t *testing.T) {
	for n := 0; n <= 24; n++ {
		for pos := 0; pos < n; pos++ {
			for _, c := range []byte{'"', '\\', 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xff, 'a'} {
				b := []byte(`"` + strings.Repeat("x", n))
				b[1+pos] = c
				b = append(b, '"', ',')
				want, wantOK := []byte(nil), false
				for j := 1; j < len(b); j++ {
					if b[j] == '"' {
						want, wantOK = b[1:j], true
						break
					}
					if b[j] == '\\' || b[j] < 0x20 {
						break
					}
				}
				s := skimmer{b: b}
				got, ok := s.plainString()
				if ok != wantOK || string(got) != string(want) {
					t.Fatalf("%q: got %q %v, want %q %v", b, got, ok, want, wantOK)
				}
			}
		}
	}
}
