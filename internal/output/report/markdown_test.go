package report

import (
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"strings"
	"testing"
)

func TestMarkdownGolden(t *testing.T) {
	r := sample()
	r.SpateVersion = "0.1.0-test"
	r.Scenarios[0].Name = "base|line"
	r.Warnings = []string{"stage x: <b>bold</b>\nsecond line"}
	var b bytes.Buffer
	if err := Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "markdown.golden", b.Bytes())
	out := b.String()
	// A pipe in a name must not break the table; HTML in text is shown, not run.
	if !strings.Contains(out, `| base\|line |`) || strings.Contains(out, "<b>") {
		t.Errorf("unescaped user strings:\n%s", out)
	}
}

func TestMarkdownVerdicts(t *testing.T) {
	for _, c := range []struct {
		name   string
		pass   bool
		strip  bool
		header string
	}{
		{"fail", false, false, "### spate: ❌ FAIL (2 of 3 thresholds failed)"},
		{"pass", true, false, "### spate: ✅ PASS (3 thresholds)"},
		{"none", true, true, "### spate: no thresholds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := sample()
			r.ThresholdsPassed = c.pass
			if c.pass && !c.strip {
				for i := range r.Scenarios {
					for j := range r.Scenarios[i].Thresholds {
						r.Scenarios[i].Thresholds[j].Pass, r.Scenarios[i].Thresholds[j].Err = true, ""
					}
				}
			}
			if c.strip {
				for i := range r.Scenarios {
					r.Scenarios[i].Thresholds = nil
				}
			}
			var b bytes.Buffer
			if err := Markdown(&b, r); err != nil {
				t.Fatal(err)
			}
			if first, _, _ := strings.Cut(b.String(), "\n"); first != c.header+" · ⚠️ measurement not valid in 1 of 2 stages" {
				t.Errorf("header %q, want %q", first, c.header)
			}
		})
	}
}
