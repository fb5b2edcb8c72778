package probe

import (
	"context"

	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuiltin checks the shipped suites: five families, OWASP tags on every
// attack family, and attacks whose success can be seen.
func TestBuiltin(t *testing.T) {
	suites, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"benign": "", "injection-direct": "LLM01", "injection-indirect": "LLM01",
		"prompt-extraction": "LLM07", "sensitive-disclosure": "LLM02",
	}
	if len(suites) != len(want) {
		t.Fatalf("%d built-in suites, want %d", len(suites), len(want))
	}
	for _, s := range suites {
		tag, ok := want[s.Name]
		if !ok {
			t.Errorf("unexpected suite %s", s.Name)
			continue
		}
		if got := strings.Join(s.OWASP, ","); got != tag {
			t.Errorf("suite %s: OWASP %q, want %q", s.Name, got, tag)
		}
		if len(s.Probes) < 6 {
			t.Errorf("suite %s: %d probes, want at least 6", s.Name, len(s.Probes))
		}
		for _, p := range s.Probes {
			if s.Kind == Attack && len(p.detectors)+len(p.planted) == 0 {
				t.Errorf("probe %s/%s has no detector", s.Name, p.ID)
			}
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(own, []byte("suite: mine\nkind: benign\nprobes:\n  - id: hi\n    prompt: hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		specs []string
		names string
		err   string
	}{
		{[]string{"all"}, "benign,injection-direct,injection-indirect,prompt-extraction,sensitive-disclosure", ""},
		{[]string{"prompt-extraction", "benign"}, "prompt-extraction,benign", ""},
		{[]string{"benign", own}, "benign,mine", ""},
		{[]string{"nope"}, "", `no probe suite "nope": built-in suites are benign, injection-direct`},
		{[]string{"benign", "all"}, "", `probe suite "benign" is selected twice`},
		{[]string{""}, "", "no probe suite selected"},
		{[]string{filepath.Join(dir, "missing.yaml")}, "", "reading probe suite"},
	}
	for _, tc := range cases {
		got, err := Load(context.Background(), tc.specs)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Load(%q): error %v, want %q", tc.specs, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Load(%q): %v", tc.specs, err)
			continue
		}
		var names []string
		for _, s := range got {
			names = append(names, s.Name)
		}
		if strings.Join(names, ",") != tc.names {
			t.Errorf("Load(%q) = %v, want %s", tc.specs, names, tc.names)
		}
	}
}

// TestParseSuiteErrors checks that each mistake in a suite file is named.
func TestParseSuiteErrors(t *testing.T) {
	cases := []struct {
		yaml, err string
	}{
		{"suite: Bad Name\nkind: attack\n", "suite: want a lower-case name"},
		{"suite: s\nkind: evil\n", `kind: want "attack" or "benign"`},
		{"suite: s\nkind: benign\nowasp: [LLM11]\n", "owasp: want ids LLM01 to LLM10"},
		{"suite: s\nkind: benign\n", "probes: the suite has none"},
		{"suite: s\nkind: benign\nmax_tokens: -1\n", "max_tokens: must not be negative"},
		{"suite: s\nkind: benign\nprobes:\n  - id: a\n", "probe a: want exactly one of prompt and messages"},
		{"suite: s\nkind: benign\nprobes:\n  - id: a\n    prompt: x\n  - id: a\n    prompt: y\n", `"a" is used twice`},
		{"suite: s\nkind: benign\nprobes:\n  - id: a\n    messages: [{role: user}]\n", "messages[0] needs a role and content"},
		{"suite: s\nkind: attack\nprobes:\n  - id: a\n    prompt: x\n", "an attack needs planted canaries or detect rules"},
		{"suite: s\nkind: attack\nprobes:\n  - id: a\n    prompt: x\n    planted: [ABCDEF-1]\n", `planted[0] "ABCDEF-1" appears in no message`},
		{"suite: s\nkind: attack\nprobes:\n  - id: a\n    prompt: x\n    detect: [{canary: X, regex: Y}]\n", "detect[0]: want exactly one of canary, regex and json"},
		{"suite: s\nkind: attack\nprobes:\n  - id: a\n    prompt: x\n    detect: [{regex: '('}]\n", "detect[0]: regex"},
		{"suite: s\nkind: attack\nprobes:\n  - id: a\n    prompt: x\n    detect: [{json: {path: a}}]\n", "json: want deny or match"},
		{"suite: s\nkind: attack\nsurprise: 1\n", "unknown field"},
		{"suite: [\n", "probe suite f.yaml"},
		{"suite: s\nprobes:\n  - id: a\n    messages: !00 00", "malformed YAML (the parser failed"}, // go-yaml panics on it
	}
	for _, tc := range cases {
		_, err := ParseSuite([]byte(tc.yaml), "f.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseSuite(%q): error %v, want %q", tc.yaml, err, tc.err)
		}
	}
}

// FuzzParseSuite checks that no suite file makes the parser panic, and that
// an accepted suite can be ordered and judged.
func FuzzParseSuite(f *testing.F) {
	f.Add([]byte("suite: s\nkind: attack\nprobes:\n  - id: a\n    system: k ABCDEF-1\n    prompt: x\n    planted: [ABCDEF-1]\n    detect: [{json: {path: a.0, deny: [x]}}]\n"))
	f.Add([]byte("suite: s\nkind: benign\nprobes:\n  - id: a\n    messages: [{role: user, content: hi}]\n"))
	// Deeper than yamllimit.MaxDepth: refused before go-yaml sees it.
	f.Add([]byte("probes: " + strings.Repeat("[", 101) + strings.Repeat("]", 101)))
	f.Add([]byte("probes:\n" + strings.Repeat("- ", 101) + "x\n"))
	if b, err := builtin.ReadFile("suites/injection-indirect.yaml"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSuite(data, "fuzz.yaml")
		if err != nil {
			return
		}
		set, err := NewSet([]*Suite{s})
		if err != nil {
			t.Fatal(err)
		}
		for i := range set.Len() {
			su, p := set.At(i)
			p.Judge(su.Kind, data)
		}
	})
}
