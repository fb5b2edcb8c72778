package merge

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spate-dev/spate/result"
)

func TestExtract(t *testing.T) {
	var doc bytes.Buffer
	if err := result.Encode(&doc, &result.Result{Schema: result.Schema, Fingerprint: "abc", Warnings: []string{"{\n}"}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"file", doc.String(), true},
		{"log", "--start-at: waiting 3.0 s\n[peak] 1s sent 4\n" + doc.String() + "shard 0/2 done\n", true},
		{"crlf log", strings.ReplaceAll("note\n"+doc.String()+"\n", "\n", "\r\n"), true},
		{"two documents: the last", "{\n\"schema\": \"nope\"\n}\n" + doc.String(), true},
		{"wrong schema", `{"schema":"other/v1"}`, false},
		{"no document", "hello\nworld\n", false},
		{"broken document", "{\n\"schema\": \n}\n", false},
	}
	for _, tt := range tests {
		r, err := Extract([]byte(tt.in))
		if (err == nil) != tt.ok {
			t.Errorf("%s: err %v", tt.name, err)
			continue
		}
		if tt.ok && r.Fingerprint != "abc" {
			t.Errorf("%s: read %+v", tt.name, r)
		}
	}
}

func FuzzExtract(f *testing.F) {
	f.Add([]byte("x\n{\n\"schema\": \"spate/result/v1\"\n}\ny\n"))
	f.Add([]byte("{\n}\n{\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Extract(b)
		if err == nil && r.Schema != result.Schema {
			t.Fatalf("accepted schema %q", r.Schema)
		}
	})
}
