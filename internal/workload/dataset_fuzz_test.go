package workload

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// FuzzDatasetStable checks the JSONL dataset reader on hostile files: it must
// not panic; an error must name the file; an accepted file must give the
// same requests and digest when read again (templates filled alike), never
// a negative max_tokens, and requests for any index.
func FuzzDatasetStable(f *testing.F) {
	for _, s := range []string{
		`{"prompt": "hello", "max_tokens": 5, "intent": "faq"}`,
		"{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n\n{\"prompt\": \"x\"}\r\n",
		`{"body": {"a": 1}, "method": "post", "path": "/x"}`,
		`{"body": "raw text", "vars": {"k": [1, 2]}}`,
		`{"prompt": "{{.Seq}} {{.RandInt 1 9}}", "vars": {"q": "x"}}`,
		`{"prompt": "a", "messages": []}`,
		`{"prompt": "a", "max_tokens": -1}`,
		`{"messages": [{"content": "no role"}]}`,
		`{"prompt": "a", "unknown": 1}`,
		"not json\n",
		`{"prompt": "\u0000\ud800"}`,
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ReadDataset(bytes.NewReader(data), "fuzz.jsonl")
		if err != nil {
			if !strings.Contains(err.Error(), "dataset fuzz.jsonl") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		again, err := ReadDataset(bytes.NewReader(data), "fuzz.jsonl")
		if err != nil {
			t.Fatalf("second read failed: %v", err)
		}
		if d.Len() < 1 || d.Len() != again.Len() || d.Digest() != again.Digest() || !hex64.MatchString(d.Digest()) {
			t.Fatalf("len %d/%d, digest %q/%q", d.Len(), again.Len(), d.Digest(), again.Digest())
		}
		// Compared with their templates filled: parsed templates hold
		// functions, which never compare equal.
		a, b := WithTemplates(d, 1), WithTemplates(again, 1)
		for n := range uint64(2 * d.Len()) {
			r, err := a.Request(n)
			r2, err2 := b.Request(n)
			if (err == nil) != (err2 == nil) {
				t.Fatalf("request %d: %v, then %v", n, err, err2)
			}
			if err != nil {
				continue // a template that fails to run fails alike both times
			}
			if r == nil || !reflect.DeepEqual(r, r2) {
				t.Fatalf("request %d differs between two reads: %+v vs %+v", n, r, r2)
			}
			if r.MaxTokens < 0 {
				t.Fatalf("request %d: max_tokens %d", n, r.MaxTokens)
			}
		}
	})
}
