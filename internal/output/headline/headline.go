// Package headline says what a report leads with: the knee of a run of
// rising load, or the capacity a capacity search found, with one sentence
// of what it means and the stages it comes from. The console's knee line,
// the Markdown report and the HTML report all take their wording from
// here, so that they always agree.
//
// Stage: outputs.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package headline

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spate-dev/spate/internal/verdict/capacity"
	"github.com/spate-dev/spate/result"
)

// MinGoodput is the share of requests within the SLO a report's knee is
// judged at (the quickstart's knee line too).
const MinGoodput = 0.9

// The kinds of headline.
const (
	// KindKnee is the knee of a run of rising load.
	KindKnee = "knee"
	// KindCapacity is the outcome of spate capacity.
	KindCapacity = "capacity"
)

// Headline is the figure a report leads with.
type Headline struct {
	// Kind is KindKnee or KindCapacity.
	Kind string
	// Figure is the figure itself, short enough for a heading:
	// "16 req/s offered (stage rate-16)", "none", "20 req/s".
	Figure string
	// Meaning is one sentence (no final full stop) of what the figure
	// means: the console's knee line after "knee: ".
	Meaning string
	// Marked are the indexes, in the result's scenarios, of the stages
	// the figure comes from: the knee's stage, or the trials at the
	// capacity's rate. Empty when there is no such stage.
	Marked []int
}

// IsMarked reports whether the scenario at index i is one the figure
// comes from.
func (h *Headline) IsMarked(i int) bool {
	for _, m := range h.Marked {
		if m == i {
			return true
		}
	}
	return false
}

// Sentence is the meaning as a sentence, with a last one saying which rows
// of the stage table are marked: "Its stage is marked ◀ knee in the stage
// table." when there are any.
func (h *Headline) Sentence() string {
	s := h.Meaning + "."
	switch {
	case len(h.Marked) == 0:
	case h.Kind == KindKnee:
		s += " Its stage is marked ◀ knee in the stage table."
	default:
		s += " The trials at that rate are marked ◀ capacity in the stage table."
	}
	return s
}

// Title is the heading of the headline: "Knee: 16.0 req/s offered (stage
// rate-16)".
func (h *Headline) Title() string {
	if h.Kind == "" {
		return h.Figure
	}
	return strings.ToUpper(h.Kind[:1]) + h.Kind[1:] + ": " + h.Figure
}

// Of returns the headline of r and whether it has one: a capacity result
// leads with its capacity; a run of more than one stage of rising load
// (see Rising) with its knee at minGoodput; any other run has none.
func Of(r *result.Result, minGoodput float64) (Headline, bool) {
	switch {
	case r.Capacity != nil:
		return Capacity(r), true
	case Rising(r.Scenarios):
		return Knee(r.Scenarios, minGoodput), true
	}
	return Headline{}, false
}

// Rising reports whether scs are more than one stage, each offering more
// load of the same kind (open-loop rate, token rate or concurrency) than
// the one before: a ramp, whose knee means something.
func Rising(scs []result.Scenario) bool {
	if len(scs) < 2 {
		return false
	}
	kind, _ := load(&scs[0])
	prev := -1.0
	for i := range scs {
		k, v := load(&scs[i])
		if k == "" || k != kind || v <= prev {
			return false
		}
		prev = v
	}
	return true
}

// load is the kind and amount of load a stage offered ("" when it set
// none: a trace replay).
func load(sc *result.Scenario) (string, float64) {
	switch {
	case sc.Load.Mode == "closed" && sc.Load.Concurrency > 0:
		return "concurrency", float64(sc.Load.Concurrency)
	case sc.Load.TargetRate > 0:
		return "rate", sc.Load.TargetRate
	case sc.Load.TargetTokenRate > 0:
		return "tokens", sc.Load.TargetTokenRate
	}
	return "", 0
}

// offered says the load a stage offered, as the knee names it.
func offered(sc *result.Scenario) string {
	switch k, v := load(sc); k {
	case "concurrency":
		return fmt.Sprintf("concurrency %d", sc.Load.Concurrency)
	case "tokens":
		return fmt.Sprintf("%.4g tokens/s offered", v)
	}
	return fmt.Sprintf("%.1f req/s offered", sc.Load.TargetRate)
}

// Knee is the knee of scs, stages in order of rising load: the most load
// the server sustained (capacity.Knee: capacity's rule for one trial — a
// valid measurement, the server completing what it was sent, its queue
// and TTFT not growing, and minGoodput of requests within the SLO at both
// ends of the measurement error), or none. Its meaning says why each
// stage above the knee is not it.
func Knee(scs []result.Scenario, minGoodput float64) Headline {
	k, as := capacity.Knee(scs, minGoodput)
	return KneeFrom(scs, minGoodput, k, as)
}

// KneeFrom is Knee from capacity.Knee's answer for scs: the knee's index
// k and every stage's assessment.
func KneeFrom(scs []result.Scenario, minGoodput float64, k int, as []capacity.Assessment) Headline {
	var why []string
	for i := k + 1; i < len(scs) && i < len(as); i++ {
		why = append(why, scs[i].Name+": "+WhyNot(&scs[i], as[i]))
	}
	note := ""
	if len(why) > 0 {
		note = " (" + strings.Join(why, "; ") + ")"
	}
	h := Headline{Kind: KindKnee, Figure: "none"}
	if k < 0 {
		for _, a := range as {
			if a.CannotTell || a.Reason == capacity.ReasonImprecise {
				h.Figure = "cannot tell" // a stage that could not be judged might have been it
			}
		}
		slo := ""
		if len(scs) > 0 {
			slo = sloText(scs[0].Goodput.SLOms)
		}
		h.Meaning = fmt.Sprintf("no stage was sustained with %.0f %% of requests within the SLO%s on a valid measurement%s", 100*minGoodput, slo, note)
		return h
	}
	sc := &scs[k]
	h.Figure = fmt.Sprintf("%s (stage %s)", offered(sc), sc.Name)
	h.Meaning = fmt.Sprintf("%s, %s, is the most load the server sustained: it kept up with what it was sent and kept %.0f %% of requests within the SLO%s on a valid measurement%s",
		sc.Name, offered(sc), 100*minGoodput, sloText(sc.Goodput.SLOms), note)
	h.Marked = []int{k}
	return h
}

// WhyNot says in a few words why a stage judged a is not the knee.
func WhyNot(sc *result.Scenario, a capacity.Assessment) string {
	switch a.Reason {
	case capacity.ReasonUnderdelivery:
		return fmt.Sprintf("fell behind, completed %.0f %% of what was sent", 100*a.Delivered)
	case capacity.ReasonQueueGrowing:
		return fmt.Sprintf("its queue grew by %.0f requests", a.QueueGrowth)
	case capacity.ReasonTTFTGrowing:
		return "its TTFT grew through the stage"
	case capacity.ReasonGoodput:
		return fmt.Sprintf("goodput %.0f %%", 100*sc.Goodput.Fraction)
	case capacity.ReasonImprecise:
		g := sc.MeasurementError.Goodput
		return fmt.Sprintf("cannot tell: responses read late put goodput in [%.1f %%, %.1f %%]", 100*g.Low, 100*g.High)
	case capacity.ReasonInvalid:
		return "the measurement was invalid (" + sc.Load.InvalidCause + ")"
	case capacity.ReasonErrors:
		return "no request succeeded"
	case capacity.ReasonTooShort:
		if len(sc.Series.SentPerS) == 0 {
			return "cannot tell: the result has no per-second series"
		}
		return "cannot tell: too few steady seconds (lengthen the stage)"
	case "":
		return "sustained"
	}
	return a.Reason
}

// Capacity is the headline of a capacity result: the capacity, the
// confidence it was decided at and its confidence interval, the goodput
// target and the SLO. An interrupted or inconclusive search names no
// capacity.
func Capacity(r *result.Result) Headline {
	c := r.Capacity
	h := Headline{Kind: KindCapacity}
	target := fmt.Sprintf("%.0f %% of requests within the SLO%s", 100*c.GoodputTarget, sloText(c.SLOms))
	decided := false
	switch {
	case c.Interrupted != "":
		h.Figure = "none (interrupted)"
		h.Meaning = fmt.Sprintf("the search was interrupted (%s) before it found the most load that kept %s", c.Interrupted, target)
	case c.Inconclusive != "":
		h.Figure = "none (inconclusive)"
		h.Meaning = fmt.Sprintf("the search could not vouch for the most load that kept %s: %s", target, c.Inconclusive)
	case c.RateRPS == 0 && c.HighRPS > 0:
		h.Figure = fmt.Sprintf("below %.4g req/s", c.HighRPS)
		h.Meaning = fmt.Sprintf("even the lowest rate tried, %.4g req/s, did not keep %s", c.HighRPS, target)
	case c.RateRPS == 0:
		h.Figure = "none found"
		h.Meaning = fmt.Sprintf("no rate tried kept %s", target)
	case c.HighRPS == 0:
		h.Figure = fmt.Sprintf("at least %.4g req/s", c.RateRPS)
		h.Meaning = fmt.Sprintf("%.4g req/s, the highest rate tried, kept %s", c.RateRPS, target)
		decided = true
	default:
		h.Figure = fmt.Sprintf("%.4g req/s", c.RateRPS)
		h.Meaning = fmt.Sprintf("%.4g req/s is the most load that kept %s", c.RateRPS, target)
		decided = true
	}
	if decided && c.Confidence > 0 && c.RateTrials[1] > 0 {
		h.Meaning += fmt.Sprintf(", decided at %.0f %% confidence (%d of %d trials passed)", 100*c.Confidence, c.RateTrials[0], c.RateTrials[1])
	}
	if iv := c.Interval; iv != nil && c.Interrupted == "" {
		h.Figure += fmt.Sprintf(", %.0f %% CI [%.4g, %.4g]", 100*iv.Confidence, iv.LowRPS, iv.HighRPS)
		h.Meaning += fmt.Sprintf("; the %.0f %% confidence interval of the capacity is [%.4g, %.4g] req/s, estimate %.4g",
			100*iv.Confidence, iv.LowRPS, iv.HighRPS, iv.EstimateRPS)
	} else if decided && c.HighRPS > 0 {
		h.Meaning += fmt.Sprintf("; no confidence interval: the search stopped between %.4g and %.4g req/s", c.LowRPS, c.HighRPS)
	}
	if !decided {
		return h
	}
	at := map[string]bool{}
	for _, tr := range c.Trials {
		if tr.Concurrency == 0 && tr.RateRPS == c.RateRPS {
			at[tr.Scenario] = true
		}
	}
	for i, sc := range r.Scenarios {
		if at[sc.Name] {
			h.Marked = append(h.Marked, i)
		}
	}
	return h
}

// sloText is " (ttft ≤ 500 ms, tpot ≤ 50 ms)", or " (none set: every
// success counts)" when the run had no SLO.
func sloText(slo map[string]float64) string {
	if len(slo) == 0 {
		return " (none set: every success counts)"
	}
	parts := make([]string, 0, len(slo))
	for k, v := range slo {
		parts = append(parts, fmt.Sprintf("%s ≤ %g ms", k, v))
	}
	sort.Strings(parts)
	return " (" + strings.Join(parts, ", ") + ")"
}
