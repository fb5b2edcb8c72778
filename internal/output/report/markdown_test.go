package report

import (
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"strings"
	"testing"

	"github.com/spate-dev/spate/llmtest"
	"github.com/spate-dev/spate/result"
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

// headlineResults are a ramp with a knee (rate-4), one with none, a
// capacity search (20 req/s in [18, 22], trials 2 and 4 at it) and a
// single stage, each with the lines its Markdown must hold (and lack).
func headlineResults() []struct {
	name          string
	r             *result.Result
	want, notWant []string
} {
	h := llmtest.HeadlineResults()
	return []struct {
		name          string
		r             *result.Result
		want, notWant []string
	}{
		{"knee", h.Knee, []string{
			"#### Knee: 4.0 req/s offered (stage rate-4)\n\nrate-4, 4.0 req/s offered, is the most load the server sustained: it kept up with what it was sent and kept 90 % of requests within the SLO (ttft ≤ 500 ms) on a valid measurement (rate-8: goodput 50 %). Its stage is marked ◀ knee in the stage table.\n",
			"| goodput | knee |\n", "| rate-4 | 4/s |", "| 95.0 % | **◀ knee** |\n", "| 99.0 % |  |\n",
		}, []string{"| 50.0 % | **◀ knee**"}},
		{"no knee", h.NoKnee, []string{
			"#### Knee: none\n\nno stage was sustained with 90 % of requests within the SLO (ttft ≤ 500 ms) on a valid measurement (rate-2: goodput 40 %; rate-4: goodput 40 %; rate-8: goodput 40 %).\n",
		}, []string{"◀", "| knee |"}},
		{"capacity", h.Capacity, []string{
			"#### Capacity: 20 req/s, 95 % CI [18, 22]\n\n20 req/s is the most load that kept 90 % of requests within the SLO (ttft ≤ 2000 ms), decided at 95 % confidence (2 of 2 trials passed); the 95 % confidence interval of the capacity is [18, 22] req/s, estimate 20.4. The trials at that rate are marked ◀ capacity in the stage table.\n",
			"| goodput | capacity |\n", "| 95.0 % | **◀ capacity** |\n", "| 93.0 % | **◀ capacity** |\n", "| 60.0 % |  |\n",
		}, []string{"#### Knee"}},
		{"single stage", h.Single, nil, []string{"####", "◀", "knee", "capacity"}},
	}
}

// TestMarkdownHeadline: the knee (or the capacity) leads the Markdown with
// what it means, and the stage table marks its rows; a single stage has
// neither.
func TestMarkdownHeadline(t *testing.T) {
	for _, c := range headlineResults() {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Markdown(&b, c.r); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "markdown-"+strings.ReplaceAll(c.name, " ", "-")+".golden", b.Bytes())
			out := b.String()
			for _, s := range c.want {
				if !strings.Contains(out, s) {
					t.Errorf("lacks %q:\n%s", s, out)
				}
			}
			for _, s := range c.notWant {
				if strings.Contains(out, s) {
					t.Errorf("holds %q:\n%s", s, out)
				}
			}
			// The section comes before the stage table.
			if i, j := strings.Index(out, "####"), strings.Index(out, "| stage |"); i > j {
				t.Errorf("the headline comes after the stage table:\n%s", out)
			}
		})
	}
}

// TestConsoleKneeAgreesWithMarkdown: the console's knee line and the
// Markdown's knee sentence are the same words.
func TestConsoleKneeAgreesWithMarkdown(t *testing.T) {
	for _, c := range headlineResults()[:2] {
		var con, md bytes.Buffer
		if err := Sweep(&con, c.r, 0.9); err != nil {
			t.Fatal(err)
		}
		if err := Markdown(&md, c.r); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(con.String()), "\n")
		knee := strings.TrimPrefix(lines[len(lines)-1], "knee: ")
		if !strings.Contains(md.String(), "\n\n"+knee+".") {
			t.Errorf("%s: the console says %q, the Markdown does not:\n%s", c.name, knee, md.String())
		}
	}
}
