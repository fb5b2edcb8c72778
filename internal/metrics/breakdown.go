package metrics

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/result"
)

// Label breakdowns keep, per label key, at most MaxLabelValues values; the
// requests of any further value are counted under OtherLabel. Their
// latency histograms have two significant figures (1 % resolution), to
// keep many groups cheap.
const (
	MaxLabelValues = 64
	OtherLabel     = "(other)"
	groupSigFigs   = 2
)

// IntentLabel is the breakdown key of a request's intent.
const IntentLabel = "intent"

// group accumulates the requests that carry one label value.
type group struct {
	total, succeeded, failed, good int
	errors                         map[string]int
	in, out                        int64
	ttft, tpot, itl, e2e           *Hist
	checked, passed                int
	tasks                          int
}

func newGroup() *group {
	lat := func() *Hist { return &Hist{h: hdr.New(1, latencyMax, groupSigFigs), scale: 1000} }
	return &group{errors: map[string]int{}, ttft: lat(), tpot: lat(), itl: lat(), e2e: lat()}
}

// breakdown holds the groups of every label key.
type breakdown map[string]map[string]*group

// groups calls f with the group of each of rec's labels, creating groups as
// needed.
func (b breakdown) each(rec *record.Record, f func(*group)) {
	if rec.Intent != "" {
		f(b.group(IntentLabel, rec.Intent))
	}
	for _, l := range rec.Labels {
		f(b.group(l.Key, l.Value))
	}
}

func (b breakdown) group(key, value string) *group {
	vals := b[key]
	if vals == nil {
		vals = map[string]*group{}
		b[key] = vals
	}
	g := vals[value]
	if g == nil {
		if len(vals) >= MaxLabelValues {
			value = OtherLabel
			if g = vals[value]; g != nil {
				return g
			}
		}
		g = newGroup()
		vals[value] = g
	}
	return g
}

// fail counts a failed request.
func (b breakdown) fail(rec *record.Record) {
	b.each(rec, func(g *group) {
		g.total++
		g.failed++
		g.errors[string(rec.Err)]++
	})
}

// ok counts a successful request.
func (b breakdown) ok(rec *record.Record, ttft time.Duration, hasTTFT bool, tpot time.Duration, hasTPOT bool, good bool) {
	b.each(rec, func(g *group) {
		g.total++
		g.succeeded++
		g.in += int64(rec.InputTokens)
		g.out += int64(rec.OutputTokens)
		if good {
			g.good++
		}
		g.e2e.recordDuration(rec.E2E())
		if hasTTFT {
			g.ttft.recordDuration(ttft)
		}
		if hasTPOT {
			g.tpot.recordDuration(tpot)
		}
		for _, gap := range rec.Gaps {
			g.itl.recordDuration(gap)
		}
		if len(rec.Checks) > 0 {
			g.checked++
			if rec.ChecksPassed() {
				g.passed++
			}
		}
		if TaskDone(rec) {
			g.tasks++
		}
	})
}

// result turns the groups into the result's breakdown; window is the
// scenario's measurement window in seconds.
func (b breakdown) result(window float64) map[string]map[string]result.Group {
	if len(b) == 0 {
		return nil
	}
	out := map[string]map[string]result.Group{}
	for key, vals := range b {
		out[key] = map[string]result.Group{}
		for v, g := range vals {
			rg := result.Group{
				Requests: result.Requests{Total: g.total, Succeeded: g.succeeded, Failed: g.failed, Errors: g.errors},
				Metrics:  map[string]result.Dist{},
			}
			for name, h := range map[string]*Hist{TTFT: g.ttft, TPOT: g.tpot, ITL: g.itl, E2E: g.e2e} {
				if h.h.TotalCount() > 0 {
					rg.Metrics[name] = h.Summary()
				}
			}
			if window > 0 {
				rg.Throughput = result.Throughput{
					RequestsPerS:     float64(g.succeeded) / window,
					InputTokensPerS:  float64(g.in) / window,
					OutputTokensPerS: float64(g.out) / window,
					TotalTokensPerS:  float64(g.in+g.out) / window,
					STPS:             float64(g.tasks) / window,
				}
				rg.Goodput.RequestsPerS = float64(g.good) / window
			}
			if done := g.succeeded + g.failed; done > 0 {
				rg.Goodput.Fraction = float64(g.good) / float64(done)
			}
			if g.checked > 0 {
				rg.Checks = checkFigures(g.checked, g.passed, window)
			}
			out[key][v] = rg
		}
	}
	return out
}

func checkFigures(checked, passed int, window float64) *result.CheckFigures {
	f := &result.CheckFigures{Checked: checked, Passed: passed, PassRate: float64(passed) / float64(checked)}
	if window > 0 {
		f.STPSChecked = float64(passed) / window
	}
	return f
}
