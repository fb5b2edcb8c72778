package scrub

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spate-dev/spate/internal/golden"
)

func TestRedactor(t *testing.T) {
	r := NewRedactor("sk-planted-key-123", "Bearer sk-other-key-456", "hv-secret-789", "ab", "")
	for _, c := range []struct{ in, want string }{
		{"key sk-planted-key-123 here", "key <redacted> here"},
		{"escaped sk-planted-key-123%20x", "escaped <redacted>%20x"},
		{"echo: Authorization: Bearer sk-other-key-456", "echo: Authorization: <redacted>"},
		{"bare sk-other-key-456", "bare <redacted>"},
		{"X-Api-Key: hv-secret-789", "X-Api-Key: <redacted>"},
		{"short ab stays", "short ab stays"},
		{`Post "http://u:p4ss@h:1/v1/chat/completions?api-version=2024&key=zz": dial tcp`, `Post "http://<redacted>@h:1/v1/chat/completions?<redacted>": dial tcp`},
		{"pgvector://user:hunter22@db:5432/x?table=t connect failed", "pgvector://<redacted>@db:5432/x?<redacted> connect failed"},
		{"host=db user=u password=hunter22 dbname=x", "host=db user=u password=<redacted> dbname=x"},
		{`{"api_key": "abc123xyz"}`, `{"api_key": "<redacted>"}`},
		{"Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic <redacted>"},
		{"nothing secret at http://h/v1", "nothing secret at http://h/v1"},
		{`target "pgvector://u:hun%zz@te@db:5432/x?table=t" bad`, `target "pgvector://<redacted>@db:5432/x?<redacted>" bad`},
	} {
		// The second time comes from the memo: the same redaction.
		for i := range 2 {
			if got := r.String(c.in); got != c.want {
				t.Errorf("String(%q), call %d\n = %q\nwant %q", c.in, i+1, got, c.want)
			}
		}
	}
	long := strings.Repeat("x", memoLen) + " password=hunter22"
	if got := r.String(long); !strings.HasSuffix(got, "password=<redacted>") {
		t.Errorf("a message past the memo's length: %q", got[memoLen:])
	}
	var nilR *Redactor
	if got := nilR.String("password=x1"); got != "password=<redacted>" {
		t.Errorf("nil redactor: %q", got)
	}
	base := errors.New("base")
	err := r.Error(fmt.Errorf("calling sk-planted-key-123: %w", base))
	if !errors.Is(err, base) || strings.Contains(err.Error(), "sk-planted") {
		t.Errorf("Error: %v", err)
	}
	if r.Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
}

// TestURL: the one URL redaction (openai, vector and observe each had
// their own: one dropped the userinfo, one kept the query, two turned an
// unparsable URL into "<unparsable URL>").
func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"},
		{"https://user:sk-secret@host/v1?key=sk-x", "https://<redacted>@host/v1?<redacted>"},
		{"http://user:secret@h:9/metrics?token=abc", "http://<redacted>@h:9/metrics?<redacted>"},
		{"https://h/openai?api-version=2024-06-01", "https://h/openai?<redacted>"},
		{"http://h/v1#k=v", "http://h/v1"},
		{"pgvector://postgres:secret@127.0.0.1:55432/postgres?sslmode=disable&table=docs", "pgvector://<redacted>@127.0.0.1:55432/postgres?<redacted>"},
		{"postgres://u@db/x", "postgres://<redacted>@db/x"},
		// Not a URL Go reads: its shape kept, its secrets masked.
		{"pgvector://u:hun%zz@te@db:5432/x?table=t", "pgvector://<redacted>@db:5432/x?<redacted>"},
		{"http://u:p@h/\x7f?k=v", "http://<redacted>@h/\x7f?<redacted>"},
		{"u:hunter22@db:5432/x", "<redacted>@db:5432/x"},
		{"127.0.0.1:p@ss:w0rd@db:8000/v1?key=k1", "<redacted>@db:8000/v1?<redacted>"},
		{"host=db user=u password=hunter22 dbname=x", "host=db user=u password=<redacted> dbname=x"},
		{"127.0.0.1:8000", "127.0.0.1:8000"},
		{"", ""},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestURLSecrets(t *testing.T) {
	got := URLSecrets("pgvector://u:hunter22@db/x?table=t&token=tk1")
	want := map[string]bool{"hunter22": true, "t": true, "tk1": true}
	if len(got) != 3 {
		t.Fatalf("%q", got)
	}
	for _, g := range got {
		if !want[g] {
			t.Errorf("unexpected %q", g)
		}
	}
}

// TestText: what a server sends is printed with its control characters
// escaped (golden: a model id with escape codes that would forge a
// "thresholds: PASS" line, bidi overrides, invalid UTF-8) and clipped.
func TestText(t *testing.T) {
	var b strings.Builder
	for _, in := range []string{
		"llama-3-8b",
		"evil\x1b[2K\r\x1b[32mthresholds: PASS\x1b[0m\nmodel fine",
		"\x9b31mC1 CSI\x07bell\x7fdel \u009b32m",
		"rtl \u202egnp.exe\u202c tab\there",
		"bad \xff\xfe utf8 ok é",
		strings.Repeat("long ", 30),
	} {
		fmt.Fprintf(&b, "%q\n  → %s\n", in, Text(in, 80))
	}
	golden.Check(t, "text.golden", []byte(b.String()))
}

// FuzzText: whatever a server sends, the printed text has no control
// character, is valid UTF-8 and is clipped.
func FuzzText(f *testing.F) {
	f.Add(EscapeSample, 80)
	f.Add("\xff\xfe\u202e\u009b", 3)
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = max % 1000
		got := Text(s, max)
		if !utf8.ValidString(got) {
			t.Fatalf("%q → invalid UTF-8 %q", s, got)
		}
		for _, c := range got {
			if unsafeRune(c) {
				t.Fatalf("%q → %q keeps %U", s, got, c)
			}
		}
		if max > 0 && len(got) > max+len("…")+6 {
			t.Fatalf("%q clipped at %d → %d bytes", s, max, len(got))
		}
	})
}

// EscapeSample is a model id that would forge a summary line.
const EscapeSample = "evil\x1b[2K\r\x1b[32mthresholds: PASS\x1b[0m"

// FuzzRedact: a planted secret never survives redaction, wherever it sits
// in the text.
// TestRedactorMemoBounded: past memoSize messages the memo stops growing
// and redaction goes on.
func TestRedactorMemoBounded(t *testing.T) {
	r := NewRedactor("sk-planted-key-123")
	for i := range memoSize + 10 {
		msg := fmt.Sprintf("request %d: sk-planted-key-123 token=t%d", i, i)
		want := fmt.Sprintf("request %d: <redacted> token=<redacted>", i)
		if got := r.String(msg); got != want {
			t.Fatalf("String(%q) = %q, want %q", msg, got, want)
		}
	}
	if n := len(r.memo.seen); n != memoSize {
		t.Errorf("memo holds %d messages, want %d", n, memoSize)
	}
}

func FuzzRedact(f *testing.F) {
	f.Add("error from http://u:p@h/v1?k=", "sk-planted-1")
	f.Add("password=", "hunter22")
	f.Fuzz(func(t *testing.T, text, secret string) {
		secret = strings.TrimSpace(secret)
		if len(secret) < minSecret || strings.ContainsAny(secret, "<>") {
			return
		}
		r := NewRedactor(secret)
		for _, s := range []string{text + secret, secret + text, text + secret + text} {
			got := r.String(s)
			for _, piece := range strings.Split(got, Mask) {
				if strings.Contains(piece, secret) {
					t.Fatalf("secret %q survives in %q", secret, got)
				}
			}
		}
	})
}

// TestLines: a message of several lines keeps its newlines and tabs; any
// other control character a server's text brought is escaped.
func TestLines(t *testing.T) {
	in := "problems:\n\tstage a: HTTP 500: evil\x1b[2K\r\x1b[32mthresholds: PASS\x1b[0m\n\tok"
	want := "problems:\n\tstage a: HTTP 500: evil\\x1b[2K\\r\\x1b[32mthresholds: PASS\\x1b[0m\n\tok"
	if got := Lines(in); got != want {
		t.Fatalf("Lines:\n%q\nwant\n%q", got, want)
	}
}
