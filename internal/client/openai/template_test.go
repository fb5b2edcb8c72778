package openai

import (
	"bytes"
	"fmt"
	"testing"
)

// sameSkim says whether two reads of a chunk found the same: model,
// finish and each choice's texts, byte for byte and nil for nil.
func sameSkim(a, b *chunkSkim) error {
	if (a.model == nil) != (b.model == nil) || !bytes.Equal(a.model, b.model) {
		return fmt.Errorf("model %q, want %q", a.model, b.model)
	}
	if (a.finish == nil) != (b.finish == nil) || !bytes.Equal(a.finish, b.finish) {
		return fmt.Errorf("finish %q, want %q", a.finish, b.finish)
	}
	if len(a.parts) != len(b.parts) {
		return fmt.Errorf("%d parts, want %d", len(a.parts), len(b.parts))
	}
	for i := range a.parts {
		if !bytes.Equal(a.parts[i].answer, b.parts[i].answer) || !bytes.Equal(a.parts[i].reasoning, b.parts[i].reasoning) {
			return fmt.Errorf("part %d %q, want %q", i, a.parts[i], b.parts[i])
		}
	}
	return nil
}

// checkTemplate reads first and then second with one template, first's
// bytes overwritten in between (a read buffer is reused), and holds the
// second read to skim's.
func checkTemplate(t *testing.T, first, second []byte) (hit bool) {
	t.Helper()
	var tm chunkTemplate
	var out chunkSkim
	buf := append([]byte(nil), first...)
	tm.read(buf, &out)
	for i := range buf {
		buf[i] = 'X'
	}
	buf = append(buf[:0], second...)
	hit = tm.ok && tm.match(buf, &chunkSkim{})
	var got, want chunkSkim
	gotOK := tm.read(buf, &got)
	wantOK := skim(second, &want)
	if gotOK != wantOK {
		t.Fatalf("%q after %q: read %v, skim %v", second, first, gotOK, wantOK)
	}
	if gotOK {
		if err := sameSkim(&got, &want); err != nil {
			t.Fatalf("%q after %q: %v", second, first, err)
		}
	}
	return hit
}

const (
	simChunk = `{"id":"chatcmpl-7f46a57c92dbee5fbd16310f54fdadaf","object":"chat.completion.chunk","created":1796542188,"model":"spate-sim","choices":[{"index":0,"delta":{"content":"%s"},"logprobs":null,"finish_reason":%s}]}`
	// llama.cpp b4747's chunk: the text before the model, created and id.
	llamaChunk = `{"choices":[{"finish_reason":%[2]s,"index":0,"delta":{"content":"%[1]s"}}],"created":1740%[3]s,"id":"chatcmpl-T","model":"gpt-3.5-turbo","system_fingerprint":"b4747-x","object":"chat.completion.chunk"}`
)

// TestTemplate reads pairs of chunks of a stream with the template and
// checks each against skim, and which pairs the template serves.
func TestTemplate(t *testing.T) {
	for _, tc := range []struct {
		name          string
		first, second string
		hit           bool
	}{
		{"next token", fmt.Sprintf(simChunk, " office", "null"), fmt.Sprintf(simChunk, " really", "null"), true},
		{"last token's finish", fmt.Sprintf(simChunk, " office", "null"), fmt.Sprintf(simChunk, " problem", `"length"`), false},
		{"after the last", fmt.Sprintf(simChunk, " problem", `"length"`), fmt.Sprintf(simChunk, " x", `"length"`), true},
		{"escaped text", fmt.Sprintf(simChunk, " office", "null"), fmt.Sprintf(simChunk, `a\"b`, "null"), false},
		{"control character", fmt.Sprintf(simChunk, " office", "null"), fmt.Sprintf(simChunk, "a\tb", "null"), false},
		{"empty text", fmt.Sprintf(simChunk, " office", "null"), fmt.Sprintf(simChunk, "", "null"), false},
		{"role chunk first", fmt.Sprintf(simChunk, "", "null"), fmt.Sprintf(simChunk, "x", "null"), false},
		{"text with a brace", fmt.Sprintf(simChunk, " office", "null"), fmt.Sprintf(simChunk, `}]}`, "null"), true},
		{"llama.cpp", fmt.Sprintf(llamaChunk, "a", "null", "000000"), fmt.Sprintf(llamaChunk, "bc", "null", "000000"), true},
		{"llama.cpp, next second", fmt.Sprintf(llamaChunk, "a", "null", "000000"), fmt.Sprintf(llamaChunk, "bc", "null", "000001"), false},
		{"reasoning", `{"model":"m","choices":[{"delta":{"reasoning_content":"hmm"}}]}`, `{"model":"m","choices":[{"delta":{"reasoning_content":"so"}}]}`, true},
		{"reasoning, then content", `{"choices":[{"delta":{"reasoning_content":"hmm"}}]}`, `{"choices":[{"delta":{"content":"so"}}]}`, false},
		{"completions text", `{"choices":[{"text":"a","index":0}],"model":"m2"}`, `{"choices":[{"text":"bb","index":0}],"model":"m2"}`, true},
		{"two choices", `{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}`, `{"choices":[{"delta":{"content":"c"}},{"delta":{"content":"b"}}]}`, false},
		{"truncated", fmt.Sprintf(simChunk, " office", "null"), `{"id":"chatcmpl-7f46a57c92dbee5fbd16310f54fdadaf","object":"chat.completion.chunk","created":1796542188,"model":"spate-sim","choices":[{"index":0,"delta":{"content":"x"`, false},
		{"trailing bytes", fmt.Sprintf(simChunk, " office", "null"), fmt.Sprintf(simChunk, " really", "null") + "x", false},
		{"model after text", `{"choices":[{"delta":{"content":"a"}}],"model":"m","id":"1"}`, `{"choices":[{"delta":{"content":"zz"}}],"model":"m","id":"1"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if hit := checkTemplate(t, []byte(tc.first), []byte(tc.second)); hit != tc.hit {
				t.Errorf("template served %v, want %v", hit, tc.hit)
			}
		})
	}
}

// FuzzTemplateMatchesSkim holds the template to skim: whatever two chunks
// come one after the other, the second is read as skim reads it.
func FuzzTemplateMatchesSkim(f *testing.F) {
	f.Add([]byte(fmt.Sprintf(simChunk, " office", "null")), []byte(fmt.Sprintf(simChunk, " really", "null")))
	f.Add([]byte(fmt.Sprintf(llamaChunk, "a", "null", "000000")), []byte(fmt.Sprintf(llamaChunk, "b", `"stop"`, "000000")))
	f.Add([]byte(`{"model":"m","choices":[{"delta":{"reasoning":"r","content":""}}]}`), []byte(`{"model":"m","choices":[{"delta":{"reasoning":"s","content":""}}]}`))
	f.Add([]byte(`{"choices":[{"text":"t"}],"model":""}`), []byte(`{"choices":[{"text":"u"}],"model":""}`))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		checkTemplate(t, first, second)
	})
}
