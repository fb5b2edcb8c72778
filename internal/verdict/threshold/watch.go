package threshold

import (
	"fmt"
	"time"
)

// Watch follows a trigger through the evaluations of one stage: it holds
// while every condition holds, fires once it has held for the trigger's
// Hold, and is armed again only once a condition stops holding (so a
// lasting bad state fires it once). A step where a figure could not be
// measured (an empty window) and no condition failed is unknown: it does
// not break a hold (which spans from its first holding step to its last),
// it cannot fire one, and a stretch of unknown steps that, had they held,
// would have made the trigger fire leaves it unable to judge (Outcome) —
// never a pass. Steps before the stage's first figure (nothing completed
// yet) are not evaluations. It is not safe for concurrent use.
type Watch struct {
	Trigger Trigger

	holding     bool
	since       time.Duration // offset of the first holding step of this hold
	firedHold   bool          // this hold has fired
	first, last time.Duration // offsets of the first and last evaluations with figures
	evaluated   int
	fired       int
	firedAt     time.Duration // offset of the first firing
	firedValue  float64
	lastValue   float64
	lastErr     string

	// The hold had every unknown step held: mayOpen says there is one
	// now, maySince where it began, mayUnknown whether it has an unknown
	// step, mayFired whether it fired. mayHeld is the longest such hold
	// that had an unknown step and did not fire, mayAt where it began,
	// mayErr why its figures were missing.
	mayOpen, mayUnknown, mayFired, mayWas bool // mayWas: mayHeld is set
	maySince, mayHeld, mayAt              time.Duration
	mayErr                                string
	figures                               bool // a step had a figure
}

// step states.
const (
	stepFalse = iota
	stepUnknown
	stepTrue
)

// Step evaluates the trigger at offset at into the stage: each condition
// on now (the current window) or, for a change, on now and its baseline in
// bases (one per condition; nil while a baseline is not known yet). It
// reports whether the trigger fired at this step. A step before every
// baseline is known is not an evaluation; a condition that does not hold
// makes the step false however many figures are missing; otherwise a
// missing figure makes it unknown (see Watch).
func (w *Watch) Step(at time.Duration, now Source, bases []Source) bool {
	state, unknownErr, measured := stepTrue, "", false
	for i, c := range w.Trigger.Conds {
		var base Source
		if i < len(bases) {
			base = bases[i]
		}
		if c.Change != "" && base == nil {
			w.lastErr = "its baseline was not measured yet"
			w.holding, w.firedHold = false, false
			w.endMay()
			return false
		}
		v, err := c.Measure(now, base)
		if err != nil {
			if state == stepTrue {
				state, unknownErr = stepUnknown, err.Error()
			}
			continue
		}
		measured = true
		if i == 0 {
			w.lastValue = v
		}
		holds := c.Holds(v)
		// Judged at both ends of the measurement error (responses read
		// late): ends that disagree make the step unknown, as a figure
		// that was not measured does.
		if lo, hi, ok := c.Range(now, base, v); ok && (c.Holds(lo) != holds || c.Holds(hi) != holds) {
			if state == stepTrue {
				state, unknownErr = stepUnknown, fmt.Sprintf("%s measured %s, but responses read late (a busy machine) put the true value anywhere in [%s, %s], on both sides of the limit", c.subject(), num(v), num(lo), num(hi))
			}
			continue
		}
		if !holds {
			state = stepFalse
		}
	}
	if !measured && !w.figures {
		// No figure at all yet in this stage (nothing completed): not
		// an evaluation. A step with one (errors while the latency has
		// none) is.
		w.lastErr = unknownErr
		return false
	}
	w.figures = w.figures || measured
	if w.evaluated == 0 {
		w.first = at
	}
	w.evaluated++
	w.last = at
	switch state {
	case stepFalse:
		w.holding, w.firedHold = false, false
		w.endMay()
		return false
	case stepUnknown:
		w.lastErr = unknownErr
		w.mayStep(at, true, unknownErr)
		return false
	}
	if !w.holding {
		w.holding, w.since = true, at
	}
	fire := !w.firedHold && at-w.since >= w.Trigger.Hold // once per hold
	if fire {
		w.firedHold, w.mayFired = true, true
		w.fired++
		if w.fired == 1 {
			w.firedAt, w.firedValue = at, w.lastValue
		}
	}
	w.mayStep(at, false, "")
	return fire
}

// mayStep extends the hold in which unknown steps are taken as holding.
func (w *Watch) mayStep(at time.Duration, unknown bool, err string) {
	if !w.mayOpen {
		w.mayOpen, w.maySince, w.mayUnknown, w.mayFired = true, at, false, false
	}
	if unknown {
		w.mayUnknown, w.mayErr = true, err
	}
	if held := at - w.maySince; w.mayUnknown && !w.mayFired && held >= w.Trigger.Hold && (!w.mayWas || held > w.mayHeld) {
		w.mayHeld, w.mayAt, w.mayWas = held, w.maySince, true
	}
}

// endMay ends the hold in which unknown steps are taken as holding.
func (w *Watch) endMay() { w.mayOpen = false }

// Fired is how many times the trigger fired.
func (w *Watch) Fired() int { return w.fired }

// Outcome is the trigger's verdict on the stage: failed when it fired
// (Value is its first condition's figure then, FiredAtS when); passed when
// it was watched at least its Hold without firing and no stretch of
// unknown steps could have made it fire (Value is the figure at the last
// evaluation); otherwise it could not judge, and Err says why.
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
	case w.mayWas:
		out.Err = fmt.Sprintf("from %s into the stage, for %s, it held or its figures could not be measured (%s): had they held, it would have fired", w.mayAt, w.mayHeld, w.mayErr)
	case w.last-w.first < w.Trigger.Hold:
		out.Err = fmt.Sprintf("the trigger was watched for %s, less than its for %s: it could not have fired", w.last-w.first, w.Trigger.Hold)
	default:
		out.Value, out.Pass = w.lastValue, true
	}
	out.Unjudged = out.Err != ""
	return out
}
