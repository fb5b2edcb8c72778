package threshold

import (
	"fmt"
	"time"
)

// Watch follows a trigger through the evaluations of one stage: it holds
// while every condition holds, fires once it has held for the trigger's
// Hold, and is armed again only once a condition stops holding (so a
// lasting bad state fires it once). It is not safe for concurrent use.
type Watch struct {
	Trigger Trigger

	holding     bool
	since       time.Duration // offset of the first evaluation of this hold
	firedHold   bool          // this hold has fired
	first, last time.Duration // offsets of the first and last evaluations with figures
	evaluated   int
	fired       int
	firedAt     time.Duration // offset of the first firing
	firedValue  float64
	lastValue   float64
	lastErr     string
}

// Step evaluates the trigger at offset at into the stage: each condition
// on now (the current window) or, for a change, on now and its baseline in
// bases (one per condition; nil while a baseline is not known yet). It
// reports whether the trigger fired at this step. A step where a figure is
// missing counts as not holding and leaves the reason for Outcome.
func (w *Watch) Step(at time.Duration, now Source, bases []Source) bool {
	holds := true
	for i, c := range w.Trigger.Conds {
		var base Source
		if i < len(bases) {
			base = bases[i]
		}
		if c.Change != "" && base == nil {
			w.lastErr = "its baseline was not measured yet"
			w.holding, w.firedHold = false, false
			return false
		}
		v, err := c.Measure(now, base)
		if err != nil {
			w.lastErr = err.Error()
			w.holding, w.firedHold = false, false
			return false
		}
		if i == 0 {
			w.lastValue = v
		}
		holds = holds && c.Holds(v)
	}
	if w.evaluated == 0 {
		w.first = at
	}
	w.evaluated++
	w.last = at
	if !holds {
		w.holding, w.firedHold = false, false
		return false
	}
	if !w.holding {
		w.holding, w.since = true, at
	}
	if w.firedHold || at-w.since < w.Trigger.Hold {
		return false // once per hold
	}
	w.firedHold = true
	w.fired++
	if w.fired == 1 {
		w.firedAt, w.firedValue = at, w.lastValue
	}
	return true
}

// Fired is how many times the trigger fired.
func (w *Watch) Fired() int { return w.fired }

// Outcome is the trigger's verdict on the stage: failed when it fired
// (Value is its first condition's figure then, FiredAtS when); passed when
// it was watched at least its Hold without firing (Value is the figure at
// the last evaluation); otherwise it could not judge, and Err says why.
func (w *Watch) Outcome() Outcome {
	out := Outcome{Expr: w.Trigger.Expr, Trigger: true, Fired: w.fired}
	if out.Expr == "" {
		out.Expr = w.Trigger.String()
	}
	switch {
	case w.fired > 0:
		s := w.firedAt.Seconds()
		out.Value, out.FiredAtS = w.firedValue, &s
	case w.evaluated == 0:
		out.Err = "the trigger was never evaluated"
		if w.lastErr != "" {
			out.Err += ": " + w.lastErr
		}
	case w.last-w.first < w.Trigger.Hold:
		out.Err = fmt.Sprintf("the trigger was watched for %s, less than its for %s: it could not have fired", w.last-w.first, w.Trigger.Hold)
	default:
		out.Value, out.Pass = w.lastValue, true
	}
	return out
}
