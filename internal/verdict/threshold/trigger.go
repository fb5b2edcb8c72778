package threshold

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// A trigger is the threshold form of an AIOps trigger (seed 004 §4.4: "P95
// latency up by more than 300 ms and errors at 5 % or more, for 2 minutes"):
//
//	COND {and COND} [for DURATION]
//	COND   = SUBJECT OP VALUE | CHANGE(SUBJECT[, BASELINE]) OP VALUE
//	CHANGE = delta | rel
//	BASELINE = previous | first DURATION
//
// for example delta(p95(e2e)) > 300ms for 2m and error_rate >= 5%. SUBJECT
// and the comparison are those of a threshold (p95(e2e), error_rate, with
// an optional {stage:NAME}); a trigger describes the bad state, not the
// good one. It is watched while a stage runs: every second each condition
// is evaluated over the last window of the run (a threshold's window,
// default 10 s); when all hold at every evaluation for DURATION (at once
// without for) the trigger fires, once, and is armed again only after a
// condition stops holding. A trigger that fired fails, like a threshold;
// with abortOnFail it stops the run.
//
// delta(S) is S now minus S in the baseline, in S's unit (300ms, 2%);
// rel(S) is that difference over the baseline's S, a fraction (30% or 0.3,
// and it may exceed 100%). The baseline is the previous stage as a whole,
// or the stage's first DURATION after its warm-up; without one it is the
// previous stage when the stage has one, else its first 30 s.

// DefaultBaselineSpan is the span of a trigger's baseline at the start of
// a stage that has no previous stage to compare with.
const DefaultBaselineSpan = 30 * time.Second

// Changes a trigger condition may compare.
const (
	ChangeDelta = "delta"
	ChangeRel   = "rel"
)

// Baseline is what a condition's change is measured against.
type Baseline struct {
	// Previous is the previous stage as a whole.
	Previous bool
	// First, when positive, is the span at the start of the stage (after
	// its warm-up). Neither set: Previous when the stage has a previous
	// stage, else DefaultBaselineSpan.
	First time.Duration
}

// Cond is one condition of a trigger: a comparison (its Threshold), of
// the subject itself or, with Change, of its change from a baseline.
type Cond struct {
	// Threshold is the comparison: subject (Agg, Percentile, Metric,
	// Stage), Op and Value. With Change ChangeRel, Value is a fraction.
	Threshold
	Change   string
	Baseline Baseline
}

// Trigger is a parsed trigger.
type Trigger struct {
	// Expr is the expression as written, surrounding space trimmed.
	Expr  string
	Conds []Cond
	// Hold is how long every condition must hold before it fires.
	Hold time.Duration
	// Stage is the stage its {stage:NAME} selectors name ("" every stage).
	Stage string
}

// IsTrigger reports whether expr is written as a trigger (it has a change,
// an "and" or a "for") rather than as a threshold.
func IsTrigger(expr string) bool {
	for _, w := range fields(expr) {
		switch w {
		case "and", "for":
			return true
		}
	}
	l := strings.ToLower(expr)
	for _, c := range []string{ChangeDelta, ChangeRel} {
		if i := strings.Index(l, c); i >= 0 && (i == 0 || !isWordByte(l[i-1])) {
			if rest := strings.TrimLeft(l[i+len(c):], " \t"); strings.HasPrefix(rest, "(") {
				return true
			}
		}
	}
	return false
}

// fields splits s at white space, in lower case.
func fields(s string) []string { return strings.Fields(strings.ToLower(s)) }

// ParseTrigger reads a trigger such as
// "delta(p95(e2e)) > 300ms for 2m and error_rate >= 5%" (see the grammar
// above). Errors name the expression and the condition that is wrong.
func ParseTrigger(expr string) (Trigger, error) {
	t, err := parseTrigger(expr)
	if err != nil {
		return Trigger{}, fmt.Errorf("trigger %q: %w", expr, err)
	}
	t.Expr = strings.TrimSpace(expr)
	return t, nil
}

func parseTrigger(expr string) (Trigger, error) {
	var t Trigger
	parts := splitWord(expr, "and")
	holdSeen := false
	for i, part := range parts {
		where := fmt.Sprintf("condition %d", i+1)
		if strings.TrimSpace(part) == "" {
			return t, fmt.Errorf("%s is empty: write COND and COND, e.g. delta(p95(e2e)) > 300ms and error_rate >= 5%%", where)
		}
		text := part
		if fs := splitWord(part, "for"); len(fs) > 1 {
			if len(fs) > 2 || holdSeen {
				return t, errors.New(`"for DURATION" is given more than once: it applies to all the conditions together, so give it once`)
			}
			holdSeen = true
			d, err := time.ParseDuration(strings.TrimSpace(fs[1]))
			if err != nil || d <= 0 {
				return t, fmt.Errorf("%s: %q after \"for\" is not a positive duration (write e.g. for 2m or for 30s)", where, strings.TrimSpace(fs[1]))
			}
			t.Hold, text = d, fs[0]
		}
		c, err := parseCond(text)
		if err != nil {
			return t, fmt.Errorf("%s (%s): %w", where, strings.TrimSpace(text), err)
		}
		if c.Stage != "" {
			if t.Stage != "" && t.Stage != c.Stage {
				return t, fmt.Errorf("%s selects stage %q, another condition %q: a trigger watches one stage (or every stage)", where, c.Stage, t.Stage)
			}
			t.Stage = c.Stage
		}
		t.Conds = append(t.Conds, c)
	}
	return t, nil
}

// splitWord splits s at the standalone word w (any case), outside
// parentheses and braces.
func splitWord(s, w string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '{':
			depth++
		case ')', '}':
			depth--
		}
		if depth == 0 && i+len(w) <= len(s) && strings.EqualFold(s[i:i+len(w)], w) && (i == 0 || isSpace(s[i-1])) &&
			(i+len(w) == len(s) || isSpace(s[i+len(w)])) {
			out = append(out, s[start:i])
			start = i + len(w)
			i += len(w) - 1
		}
	}
	return append(out, s[start:])
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// parseCond reads one condition: a threshold, or CHANGE(SUBJECT[,
// BASELINE]) OP VALUE.
func parseCond(text string) (Cond, error) {
	s := strings.TrimSpace(text)
	change := ""
	l := strings.ToLower(s)
	for _, c := range []string{ChangeDelta, ChangeRel} {
		if rest, ok := strings.CutPrefix(l, c); ok && strings.HasPrefix(strings.TrimLeft(rest, " \t"), "(") {
			change = c
		}
	}
	if change == "" {
		th, err := parseBare(s)
		return Cond{Threshold: th}, err
	}
	open := strings.IndexByte(s, '(')
	close := matching(s, open)
	if close < 0 {
		return Cond{}, fmt.Errorf("unclosed \"(\" after %s: write %s(p95(e2e)) > 300ms", change, change)
	}
	inner, rest := s[open+1:close], s[close+1:]
	subject, base, hasBase := cutTop(inner, ',')
	var c Cond
	c.Change = change
	if hasBase {
		b, err := parseBaseline(base)
		if err != nil {
			return c, err
		}
		c.Baseline = b
	}
	if strings.TrimSpace(subject) == "" {
		return c, fmt.Errorf("%s() needs a subject: write %s(p95(e2e)) or %s(error_rate)", change, change, change)
	}
	if change == ChangeDelta {
		th, err := parseBare(subject + rest)
		if err != nil {
			return c, err
		}
		c.Threshold = th
		return c, nil
	}
	// rel: the subject's unit does not apply; the value is a fraction.
	opAt := strings.IndexAny(rest, "<>=!")
	if opAt < 0 {
		return c, fmt.Errorf("missing comparison after %s(...) (write e.g. rel(p95(e2e)) > 30%%)", change)
	}
	th, err := parseBare(subject + rest[:opAt] + " >= 0")
	if err != nil {
		return c, err
	}
	valueText := strings.TrimLeft(rest[opAt:], "<>=!")
	op := strings.TrimSpace(rest[opAt : len(rest)-len(valueText)])
	switch op {
	case "<", "<=", ">", ">=", "==", "!=":
	default:
		return c, fmt.Errorf("unknown operator %q (use <, <=, >, >=, == or !=)", op)
	}
	v, err := parseFraction(strings.TrimSpace(valueText))
	if err != nil {
		return c, err
	}
	th.Op, th.Value = op, v
	c.Threshold = th
	return c, nil
}

// parseBare reads a threshold, its error without the "threshold ..."
// prefix (the trigger's error names the expression).
func parseBare(s string) (Threshold, error) {
	p := parser{src: s}
	t, err := p.parse()
	if err != nil {
		return Threshold{}, err
	}
	t.Expr = strings.TrimSpace(s)
	return t, nil
}

// matching is the index of the ")" closing the "(" at open, or −1.
func matching(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// cutTop cuts s at the first sep outside parentheses and braces.
func cutTop(s string, sep byte) (before, after string, found bool) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '{':
			depth++
		case ')', '}':
			depth--
		case sep:
			if depth == 0 {
				return s[:i], s[i+1:], true
			}
		}
	}
	return s, "", false
}

// parseBaseline reads previous or first DURATION.
func parseBaseline(s string) (Baseline, error) {
	f := fields(s)
	switch {
	case len(f) == 1 && f[0] == "previous":
		return Baseline{Previous: true}, nil
	case len(f) == 2 && f[0] == "first":
		d, err := time.ParseDuration(f[1])
		if err == nil && d >= time.Second && d%time.Second == 0 {
			return Baseline{First: d}, nil
		}
		return Baseline{}, fmt.Errorf("baseline %q: the span is whole seconds, at least 1s (e.g. first 30s)", strings.TrimSpace(s))
	}
	return Baseline{}, fmt.Errorf("baseline %q: write previous (the previous stage) or first DURATION (the stage's start, e.g. first 30s)", strings.TrimSpace(s))
}

// parseFraction reads a non-negative fraction written as a plain number or
// with %, which may exceed 1 (a relative change of +150 %).
func parseFraction(s string) (float64, error) {
	num, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	num = strings.TrimSpace(num)
	if num == "" || strings.Trim(num, "0123456789.") != "" || strings.Count(num, ".") > 1 || num == "." {
		return 0, fmt.Errorf("value %q: a relative change is a fraction, e.g. 30%% or 0.3", s)
	}
	if pct {
		return scale(num, units["%"])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, fmt.Errorf("value %q: not a number", s)
	}
	return v, nil
}

// String returns the canonical form of t, which ParseTrigger reads back to
// an equal Trigger (apart from Expr).
func (t Trigger) String() string {
	parts := make([]string, len(t.Conds))
	for i, c := range t.Conds {
		parts[i] = c.String()
		if i == 0 && t.Hold > 0 {
			parts[i] += " for " + t.Hold.String()
		}
	}
	return strings.Join(parts, " and ")
}

// String returns the canonical form of c.
func (c Cond) String() string {
	if c.Change == "" {
		return c.Threshold.String()
	}
	inner := c.Threshold.subject()
	switch {
	case c.Baseline.Previous:
		inner += ", previous"
	case c.Baseline.First > 0:
		inner += ", first " + c.Baseline.First.String()
	}
	value := c.Threshold.String()[len(c.Threshold.subject())+1:] // "OP VALUE[UNIT]"
	if c.Change == ChangeRel {
		value = c.Op + " " + strconv.FormatFloat(c.Value, 'f', -1, 64)
	}
	return c.Change + "(" + inner + ") " + value
}

// Measure is the figure c compares: its subject's value in now, or its
// change from base (delta: now − base; rel: (now − base) / base). It fails
// when a figure is missing or not a finite number, or a relative change
// has a zero baseline.
func (c Cond) Measure(now, base Source) (float64, error) {
	v, err := lookup(now, c.Threshold)
	if err != nil || c.Change == "" {
		return v, err
	}
	if base == nil {
		return 0, fmt.Errorf("%s has no baseline", c.subject())
	}
	b, err := lookup(base, c.Threshold)
	if err != nil {
		return 0, fmt.Errorf("baseline: %w", err)
	}
	if c.Change == ChangeDelta {
		return v - b, nil
	}
	if b == 0 {
		return 0, fmt.Errorf("the baseline of %s is 0: a relative change has no value (use delta)", c.subject())
	}
	return (v - b) / b, nil
}

// Range is the range the true value of c's figure lies in given the
// measurement error of now and base (each a Bounder, else exact), for the
// measured value v Measure gave: for a change, from the ends of both
// figures' ranges. ok is false when neither has a range.
func (c Cond) Range(now, base Source, v float64) (lo, hi float64, ok bool) {
	bounds := func(src Source) (lo, hi float64, ok bool) {
		if src == nil {
			return 0, 0, false
		}
		b, is := src.(Bounder)
		if !is {
			return 0, 0, false
		}
		return b.Bounds(c.Threshold.Agg, c.Threshold.Percentile, c.Threshold.LookupName())
	}
	nlo, nhi, nok := bounds(now)
	if c.Change == "" {
		return nlo, nhi, nok
	}
	blo, bhi, bok := bounds(base)
	if !nok && !bok {
		return 0, 0, false
	}
	n, _ := lookup(now, c.Threshold)
	b, _ := lookup(base, c.Threshold)
	if !nok {
		nlo, nhi = n, n
	}
	if !bok {
		blo, bhi = b, b
	}
	if c.Change == ChangeDelta {
		return nlo - bhi, nhi - blo, true
	}
	if blo <= 0 {
		return math.Inf(-1), math.Inf(1), true // the baseline may be 0: any change
	}
	// (n − b) / b = n/b − 1 rises with n and falls with b (figures ≥ 0).
	return nlo/bhi - 1, nhi/blo - 1, true
}

// Holds reports whether the measured value v meets c's comparison.
func (c Cond) Holds(v float64) bool {
	cmp, ok := compare[c.Op]
	return ok && cmp(v, c.Value)
}

// lookup is t's subject in src, or why it has none or src doubts it.
func lookup(src Source, t Threshold) (float64, error) {
	v, ok := src.Lookup(t.Agg, t.Percentile, t.LookupName())
	switch {
	case !ok:
		return 0, fmt.Errorf("%s was not measured", t.subject())
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("%s has no value (no samples)", t.subject())
	}
	if d, ok := src.(Doubter); ok {
		if why := d.Doubt(t.Agg, t.Percentile, t.LookupName()); why != "" {
			return 0, fmt.Errorf("%s cannot be judged: %s", t.subject(), why)
		}
	}
	return v, nil
}
