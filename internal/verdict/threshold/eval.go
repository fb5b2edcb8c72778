package threshold

import (
	"fmt"
	"math"
	"strconv"

	"github.com/spate-dev/spate/result"
)

// Source gives the observed value of a metric: agg is "" for scalars. For a
// distribution agg is one of the Agg* constants and, for AggPercentile,
// percentile is in (0, 100] (99.9 for p99.9); otherwise percentile is 0.
// Latencies are in milliseconds and fractions in [0, 1], as in the result
// file. ok is false when the run has no such figure.
type Source interface {
	Lookup(agg string, percentile float64, metric string) (float64, bool)
}

// Bounder is a Source that knows how far its generator's own lateness
// may have moved a figure: its true value lies in [lo, hi] (asked as
// Lookup is); ok is false when the figure is exact.
type Bounder interface {
	Bounds(agg string, percentile float64, metric string) (lo, hi float64, ok bool)
}

// Intervaler is a Source that knows a figure's sampling interval (asked
// as Lookup is); ok is false when the figure has none.
type Intervaler interface {
	Interval(agg string, percentile float64, metric string) (lo, hi float64, ok bool)
}

// Doubter is a Source that knows when a figure it has cannot be judged all
// the same (it rests on counts the run does not trust): Doubt says why,
// asked as Lookup is, "" when the figure can be judged.
type Doubter interface {
	Doubt(agg string, percentile float64, metric string) string
}

// Outcome is the verdict on one threshold, as written to the result file's
// thresholds[] (the type is the result package's, so that the result file's
// types name no internal package).
type Outcome = result.ThresholdOutcome

// Eval checks t against the value src observes. A figure src does not have,
// or one that is NaN, is no pass and no failure: Err says why and Unjudged
// marks it (the run cannot judge), so a gate never passes on a figure it
// could not see; so is a figure src doubts (Doubter). An infinite figure (a recovery that never came) fails,
// with Err saying so. Value is 0 with Err (JSON cannot hold NaN or ±Inf).
// == and != compare exactly.
func (t Threshold) Eval(src Source) Outcome {
	out := Outcome{Expr: t.Expr}
	if out.Expr == "" {
		out.Expr = t.String()
	}
	cmp, ok := compare[t.Op]
	if !ok {
		out.Err = fmt.Sprintf("invalid operator %q (use <, <=, >, >=, == or !=)", t.Op)
		return out
	}
	if math.IsNaN(t.Value) || math.IsInf(t.Value, 0) {
		out.Err = fmt.Sprintf("invalid limit %v: not a finite number", t.Value)
		return out
	}
	subject := t.subject()
	if src == nil {
		out.Err = fmt.Sprintf("no results to check %s against", subject)
		return out
	}
	v, ok := src.Lookup(t.Agg, t.Percentile, t.LookupName())
	switch {
	case !ok:
		if _, _, known := lookupMetric(t.Metric); !known {
			out.Err = fmt.Sprintf("unknown metric %q; known %s", t.Metric, knownList())
		} else {
			out.Err, out.Unjudged = fmt.Sprintf("%s was not measured in this run", subject), true
		}
	case math.IsNaN(v):
		if why, ok := noValue[t.Metric]; ok {
			out.Err = fmt.Sprintf("%s has no value: %s", subject, why)
		} else {
			out.Err = fmt.Sprintf("observed %s is NaN (no samples?)", subject)
		}
		out.Unjudged = true
	case math.IsInf(v, 0):
		out.Err = fmt.Sprintf("observed %s is %v", subject, v)
	default:
		out.Value = v
		if d, ok := src.(Doubter); ok {
			if why := d.Doubt(t.Agg, t.Percentile, t.LookupName()); why != "" {
				out.Err, out.Unjudged = fmt.Sprintf("measured %s, but %s cannot be judged: %s", num(v), subject, why), true
				return out
			}
		}
		out.Pass = cmp(v, t.Value)
		if iv, ok := src.(Intervaler); ok {
			if lo, hi, ok := iv.Interval(t.Agg, t.Percentile, t.LookupName()); ok {
				out.Interval = &result.Range{Low: lo, High: hi}
			}
		}
		if b, ok := src.(Bounder); ok {
			if lo, hi, ok := b.Bounds(t.Agg, t.Percentile, t.LookupName()); ok && lo < hi {
				judgeRange(&out, t, lo, hi)
			}
		}
	}
	return out
}

// judgeRange decides out (measured and judged on its value) again at both
// ends of [lo, hi], the range its figure's true value lies in: the verdict
// stands when it is the same at both, else the threshold is unjudged,
// saying why. == and != hold across the range only when the limit is
// outside it.
func judgeRange(out *Outcome, t Threshold, lo, hi float64) {
	out.Low, out.High = &lo, &hi
	var atLo, atHi bool
	switch t.Op {
	case "==", "!=":
		outside := t.Value < lo || t.Value > hi
		atLo, atHi = outside == (t.Op == "!="), outside == (t.Op == "!=")
		if !outside {
			atLo = !atHi // the limit is inside: either can be true
		}
	default:
		cmp := compare[t.Op]
		atLo, atHi = cmp(lo, t.Value), cmp(hi, t.Value)
	}
	if atLo == atHi && atLo == out.Pass {
		return
	}
	out.Pass, out.Unjudged = false, true
	why, fix := "responses read late (a busy machine) put", "lower the load on this machine, shard the load, or set the limit outside that range"
	if t.Metric == "ice" {
		why, fix = "ICE is estimated from the top logprobs, which puts", "ask for more top logprobs (--logprobs), or set the limit outside that range"
	}
	out.Err = fmt.Sprintf("measured %s, but %s the true value anywhere in [%s, %s], on both sides of the limit %s: %s",
		num(out.Value), why, num(lo), num(hi), num(t.Value), fix)
}

// num formats a figure for a message: four significant digits.
func num(v float64) string {
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// noValue says why a metric may have no value in a run, for the error of a
// threshold that cannot judge it.
var noValue = map[string]string{
	"stps_checked":  "no request had answer checks (stps counts every task done)",
	"recovery_time": "the stage ended less than one recovery window after the last second over the SLO, too soon to tell whether the service recovered (lengthen the stage after the fault)",
}

// compare maps each operator to its test of observed against limit.
var compare = map[string]func(observed, limit float64) bool{
	"<":  func(a, b float64) bool { return a < b },
	"<=": func(a, b float64) bool { return a <= b },
	">":  func(a, b float64) bool { return a > b },
	">=": func(a, b float64) bool { return a >= b },
	"==": func(a, b float64) bool { return a == b },
	"!=": func(a, b float64) bool { return a != b },
}

// EvalAll evaluates every threshold in order against src. allPass is true
// when every outcome passed, including when ts is empty. outs is never nil,
// so it encodes as a JSON array.
func EvalAll(ts []Threshold, src Source) (outs []Outcome, allPass bool) {
	outs = make([]Outcome, 0, len(ts))
	allPass = true
	for _, t := range ts {
		o := t.Eval(src)
		allPass = allPass && o.Pass
		outs = append(outs, o)
	}
	return outs, allPass
}
