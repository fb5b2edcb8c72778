// Package scrub makes text safe to keep and to print: Redactor.String
// removes secrets (the run's API key and header values, URL userinfo and
// query strings, password= and key= parameters, bearer tokens) from every
// message, record, result, report and log line a run writes, and Text
// escapes the control characters of what a server sent (its model id,
// error bodies, header values) and clips it, so that a hostile server can
// neither forge a line of the summary nor drive the terminal.
//
// Across stages: the client (what servers send), the runner (records),
// the plan (results, errors, logs) and the command line.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package scrub

import (
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Mask replaces what is redacted.
const Mask = "<redacted>"

// minSecret is the shortest configured secret that is redacted: shorter
// ones would mask ordinary words.
const minSecret = 4

// Redactor redacts one run's secrets and the secret-looking parts of any
// text. The zero Redactor (and nil) redacts the patterns only. It is safe
// for concurrent use.
type Redactor struct {
	secrets []string // longest first
	memo    *memo    // nil in the zero Redactor
}

// memo keeps the redaction of messages already seen: a run's error
// messages repeat (an interrupted run cancels thousands of requests with
// one message), and the patterns cost microseconds a message.
type memo struct {
	mu   sync.Mutex
	seen map[string]string
}

// memoSize bounds the messages a Redactor remembers; past it, new ones
// are redacted each time.
const memoSize = 1024

// memoLen is the longest message remembered (so the memo holds at most
// about a megabyte).
const memoLen = 512

// NewRedactor returns a Redactor of the given secrets (API keys, header
// values, passwords): each is masked wherever it appears, as it is and
// URL-escaped. Empty and very short values are left out.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{memo: &memo{seen: map[string]string{}}}
	seen := map[string]bool{}
	add := func(s string) {
		if len(s) >= minSecret && !seen[s] {
			seen[s] = true
			r.secrets = append(r.secrets, s)
		}
	}
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		add(s)
		add(url.QueryEscape(s))
		add(url.PathEscape(s))
		if v, ok := strings.CutPrefix(s, "Bearer "); ok {
			add(strings.TrimSpace(v))
		}
	}
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

// URLSecrets returns the secrets of a URL worth redacting wherever they
// appear: its userinfo password and its query values.
func URLSecrets(raw string) []string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil
	}
	var out []string
	if p, ok := u.User.Password(); ok {
		out = append(out, p)
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	return out
}

var (
	// urlPattern finds URLs with userinfo or a query in text.
	urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s"'<>\x60]+`)
	// paramPattern finds key=value parameters whose value is a secret
	// (DSNs, query strings, form bodies, JSON-ish echoes).
	paramPattern = regexp.MustCompile(`(?i)\b(password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|token|sig|signature)("?\s*[=:]\s*"?)([^\s&;,"'<>]+)`)
	// bearerPattern finds credentials after an authorization scheme.
	bearerPattern = regexp.MustCompile(`(?i)\b(bearer|basic)\s+([A-Za-z0-9._~+/=\-]{4,})`)
)

// String returns s with the secrets masked.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	if r == nil || r.memo == nil || len(s) > memoLen {
		return r.redact(s)
	}
	r.memo.mu.Lock()
	red, ok := r.memo.seen[s]
	r.memo.mu.Unlock()
	if ok {
		return red
	}
	red = r.redact(s)
	r.memo.mu.Lock()
	if len(r.memo.seen) < memoSize {
		r.memo.seen[s] = red
	}
	r.memo.mu.Unlock()
	return red
}

// redact masks s's secrets (r may be nil).
func (r *Redactor) redact(s string) string {
	if r != nil {
		for _, sec := range r.secrets {
			if strings.Contains(s, sec) {
				s = strings.ReplaceAll(s, sec, Mask)
			}
		}
	}
	if strings.Contains(s, "://") {
		s = urlPattern.ReplaceAllStringFunc(s, URL)
	}
	s = paramPattern.ReplaceAllString(s, "${1}${2}"+Mask)
	s = bearerPattern.ReplaceAllString(s, "${1} "+Mask)
	return s
}

// Error returns err with its message redacted; errors.Is and errors.As
// still see err (nil stays nil).
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	red := r.String(msg)
	if red == msg {
		return err
	}
	return &redacted{msg: red, err: err}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }

// URL returns a URL with its userinfo and query masked
// (http://<redacted>@host/v1?<redacted>), for display: the one redaction
// of a URL that every package uses. Text that Go does not read as a URL
// with a host (a password with a bad escape, "user:pass@host" without a
// scheme, a key=value DSN) keeps its shape, with any "user:pass@" before
// the host, its query and its password= parameters masked.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" && u.User == nil {
		head, rest := "", raw
		if i := strings.Index(raw, "://"); i >= 0 {
			head, rest = raw[:i+3], raw[i+3:]
		}
		end := len(rest)
		if j := strings.IndexAny(rest, "/?#"); j >= 0 {
			end = j
		}
		if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
			rest = Mask + rest[at:]
		}
		if q := strings.IndexByte(rest, '?'); q >= 0 {
			rest = rest[:q+1] + Mask
		}
		return paramPattern.ReplaceAllString(head+rest, "${1}${2}"+Mask)
	}
	if u.User == nil && u.RawQuery == "" && !strings.Contains(u.Fragment, "=") {
		return raw
	}
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	if u.User != nil {
		b.WriteString(Mask)
		b.WriteByte('@')
	}
	b.WriteString(u.Host)
	b.WriteString(u.EscapedPath())
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteString("?" + Mask)
	}
	return b.String()
}

// Text returns s made safe to print: control characters (a terminal's
// escape sequences among them, and newlines) and Unicode's bidirectional
// overrides are written as Go escapes (\x1b, \n, \u202e), invalid UTF-8 as
// U+FFFD, and the result is clipped to max bytes (0: not clipped) with an
// ellipsis.
func Text(s string, max int) string {
	clean := true
	for _, c := range s {
		if c == utf8.RuneError || unsafeRune(c) {
			clean = false
			break
		}
	}
	if clean && (max <= 0 || len(s) <= max) {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if max > 0 && b.Len() >= max {
			b.WriteString("…")
			break
		}
		switch {
		case c == utf8.RuneError:
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				b.WriteRune(utf8.RuneError)
				continue
			}
			b.WriteRune(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x80 && unsafeRune(c):
			b.WriteString(`\x`)
			b.WriteByte("0123456789abcdef"[c>>4])
			b.WriteByte("0123456789abcdef"[c&15])
		case unsafeRune(c):
			const hex = "0123456789abcdef"
			b.WriteString(`\u`)
			for shift := 12; shift >= 0; shift -= 4 {
				b.WriteByte(hex[(c>>uint(shift))&15])
			}
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// Lines is Text for a message of several lines: its newlines and tabs
// are kept, every other control character is escaped, nothing is
// clipped. It makes an error safe to print whatever server text it
// quotes.
func Lines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		cells := strings.Split(l, "\t")
		for j, c := range cells {
			cells[j] = Text(c, 0)
		}
		lines[i] = strings.Join(cells, "\t")
	}
	return strings.Join(lines, "\n")
}

// unsafeRune reports a rune that can change how a terminal shows text:
// C0 and C1 controls, DEL, and bidirectional formatting characters.
func unsafeRune(c rune) bool {
	switch {
	case unicode.IsControl(c):
		return true
	case c >= 0x202a && c <= 0x202e, c >= 0x2066 && c <= 0x2069, c == 0x200e, c == 0x200f, c == 0x061c:
		return true
	}
	return false
}
