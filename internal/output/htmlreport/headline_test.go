package htmlreport

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/llmtest"
	"github.com/spate-dev/spate/result"
)

// TestRenderHeadline: the summary leads with the knee (or the capacity)
// and what it means, and the stage table marks its rows; a single stage
// has neither.
func TestRenderHeadline(t *testing.T) {
	h := llmtest.HeadlineResults()
	for _, c := range []struct {
		name     string
		r        *result.Result
		headline []string // what the headline card holds; none when empty
		marked   []string // the stages whose rows are marked
		mark     string
	}{
		{"knee", h.Knee, []string{`<div class="headline"><div class="headline-figure">Knee: 4.0 req/s offered (stage rate-4)</div>`,
			"rate-4, 4.0 req/s offered, is the most load the server sustained: it kept up with what it was sent and kept 90 % of requests within the SLO (ttft ≤ 500 ms) on a valid measurement (rate-8: goodput 50 %). Its stage is marked ◀ knee in the stage table."},
			[]string{"rate-4"}, "knee"},
		{"no knee", h.NoKnee, []string{`<div class="headline headline-none"><div class="headline-figure">Knee: none</div>`,
			"no stage was sustained with 90 % of requests within the SLO (ttft ≤ 500 ms) on a valid measurement (rate-2: goodput 40 %; rate-4: goodput 40 %; rate-8: goodput 40 %)."}, nil, ""},
		{"capacity", h.Capacity, []string{`<div class="headline-figure">Capacity: 20 req/s, 95 % CI [18, 22]</div>`,
			"20 req/s is the most load that kept 90 % of requests within the SLO (ttft ≤ 2000 ms), decided at 95 % confidence (2 of 2 trials passed); the 95 % confidence interval of the capacity is [18, 22] req/s, estimate 20.4."},
			[]string{"trial-2", "trial-4"}, "capacity"},
		{"single stage", h.Single, nil, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Render(&b, []*result.Result{c.r}, Options{Generated: time.Unix(0, 0)}); err != nil {
				t.Fatal(err)
			}
			page := b.String()
			summary := page[strings.Index(page, `<section id="summary">`):strings.Index(page, `<section id="stages">`)]
			for _, s := range c.headline {
				if !strings.Contains(summary, s) {
					t.Errorf("the summary lacks %q:\n%s", s, summary)
				}
			}
			if len(c.headline) == 0 && strings.Contains(page, `class="headline`) {
				t.Errorf("a headline card on a run without one:\n%s", summary)
			}
			if n := strings.Count(page, `<tr class="marked">`); n != len(c.marked) {
				t.Errorf("%d rows marked, want %d", n, len(c.marked))
			}
			for _, s := range c.marked {
				if !strings.Contains(page, `<tr class="marked">`+"\n<td>"+s+` <span class="badge mark">◀ `+c.mark+`</span></td>`) {
					t.Errorf("the row of %s is not marked ◀ %s", s, c.mark)
				}
			}
		})
	}
}
