package threshold

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// example is the expression error messages offer as a model.
const example = "p99(ttft) < 800ms"

// aggHelp lists the aggregates in error messages.
const aggHelp = "use p50, p90, p95, p99, p99.9 or any pNN, mean, avg, min, max, stddev or count"

// unitHelp lists the units in error messages.
const unitHelp = "use us, ms, s, m or %"

// units maps each accepted unit (lower case) to its factor into the stored
// value: milliseconds for durations, a fraction for %.
var units = map[string]*big.Rat{
	"us": big.NewRat(1, 1000),
	"µs": big.NewRat(1, 1000), // U+00B5 MICRO SIGN
	"μs": big.NewRat(1, 1000), // U+03BC GREEK SMALL LETTER MU
	"ms": big.NewRat(1, 1),
	"s":  big.NewRat(1000, 1),
	"m":  big.NewRat(60000, 1),
	"%":  big.NewRat(1, 100),
}

// aggAliases maps the non-percentile aggregate spellings to canonical names.
var aggAliases = map[string]string{
	"mean":   AggMean,
	"avg":    AggMean,
	"min":    AggMin,
	"max":    AggMax,
	"stddev": AggStddev,
	"count":  AggCount,
}

// aggHints suggests an aggregate for common spellings spate does not accept.
var aggHints = map[string]string{
	"median":  "p50",
	"average": "mean",
	"std":     "stddev",
	"stdev":   "stddev",
	"sd":      "stddev",
	"n":       "count",
}

// opHints maps mistaken operators to the one probably meant.
var opHints = map[string]string{
	"=":   "==",
	"===": "==",
	"=<":  "<=",
	"=>":  ">=",
	"<>":  "!=",
	"!":   "!=",
	"=!":  "!=",
}

// Parse reads one threshold expression such as "p99(ttft) < 800ms" (see the
// package documentation for the grammar). Errors name the expression, the part
// that is wrong and how to write it.
func Parse(expr string) (Threshold, error) {
	p := parser{src: expr}
	t, err := p.parse()
	if err != nil {
		return Threshold{}, fmt.Errorf("threshold %q: %w", expr, err)
	}
	t.Expr = strings.TrimSpace(expr)
	return t, nil
}

// parser scans one expression; pos is a byte offset into src.
type parser struct {
	src string
	pos int
}

// column is the 1-based character column of byte offset pos, for messages.
func (p *parser) column(pos int) int {
	return utf8.RuneCountInString(p.src[:pos]) + 1
}

// rest is the unread input from pos, trimmed, shortened for messages.
func (p *parser) rest() string {
	r := strings.TrimSpace(p.src[p.pos:])
	if len(r) > 20 {
		cut := 20
		for cut > 0 && !utf8.RuneStart(r[cut]) {
			cut--
		}
		r = r[:cut] + "…"
	}
	return r
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if !unicode.IsSpace(r) {
			return
		}
		p.pos += n
	}
}

// span consumes the longest run of bytes for which ok holds.
func (p *parser) span(ok func(byte) bool) string {
	start := p.pos
	for p.pos < len(p.src) && ok(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.'
}

func isOpByte(c byte) bool { return c == '<' || c == '>' || c == '=' || c == '!' }

func isNumberByte(c byte) bool { return c >= '0' && c <= '9' || c == '.' }

func (p *parser) parse() (Threshold, error) {
	var t Threshold
	p.skipSpace()
	if p.pos == len(p.src) {
		return t, fmt.Errorf("empty expression (write e.g. %s)", example)
	}

	// Left-hand side: METRIC or AGG(METRIC).
	start := p.pos
	word := p.span(isWordByte)
	if word == "" || word[0] >= '0' && word[0] <= '9' || word[0] == '.' {
		p.pos = start
		return t, fmt.Errorf("expected a metric such as %s at column %d, found %q (the metric goes on the left)",
			example, p.column(start), p.rest())
	}
	p.skipSpace()
	hasAgg := p.pos < len(p.src) && p.src[p.pos] == '('
	metricStart := start
	if hasAgg {
		var err error
		if t.Agg, t.Percentile, err = parseAgg(word, p.column(start)); err != nil {
			return t, err
		}
		open := p.pos
		p.pos++ // (
		p.skipSpace()
		metricStart = p.pos
		word = p.span(isWordByte)
		if word == "" {
			return t, fmt.Errorf("expected a metric name after \"(\" at column %d, found %q (write e.g. %s)",
				p.column(open), p.rest(), example)
		}
		p.skipSpace()
		if p.pos == len(p.src) || p.src[p.pos] != ')' {
			return t, fmt.Errorf("expected \")\" after %q at column %d, found %q",
				strings.TrimSpace(p.src[start:p.pos]), p.column(p.pos), p.rest())
		}
		p.pos++ // )
	}
	metric := strings.ToLower(word)
	if !validIdent(metric) {
		return t, fmt.Errorf("invalid metric name %q at column %d (a metric is a letter followed by letters, digits or _, e.g. ttft)",
			word, p.column(metricStart))
	}
	t.Metric = metric

	// Optional selectors: {stage:NAME}, {input:BUCKET}, or both in one
	// pair of braces, comma-separated.
	p.skipSpace()
	for p.pos < len(p.src) && p.src[p.pos] == '{' {
		open := p.pos
		end := strings.IndexByte(p.src[open:], '}')
		if end < 0 {
			return t, fmt.Errorf("unclosed \"{\" at column %d (write e.g. p99(e2e){stage:peak} < 5s)", p.column(open))
		}
		for _, item := range strings.Split(p.src[open+1:open+end], ",") {
			key, val, ok := strings.Cut(item, ":")
			key, val = strings.TrimSpace(key), strings.TrimSpace(val)
			switch {
			case !ok || key == "" || val == "":
				return t, fmt.Errorf("selector %q at column %d: write {stage:NAME} or {input:BUCKET}", p.src[open:open+end+1], p.column(open))
			case key == "stage" && t.Stage != "", key == "input" && t.Input != "":
				return t, fmt.Errorf("selector %s is given twice at column %d", key, p.column(open))
			case key == "stage":
				if !validStage(val) {
					return t, fmt.Errorf("stage name %q at column %d: use letters, digits, _, - and .", val, p.column(open))
				}
				t.Stage = val
			case key == "input":
				if !inputBucket(val) {
					return t, fmt.Errorf("input bucket %q at column %d: use one of %s", val, p.column(open), strings.Join(InputBuckets, ", "))
				}
				t.Input = val
			default:
				return t, fmt.Errorf("selector key %q at column %d: stage and input are known (write {stage:NAME} or {input:BUCKET})", key, p.column(open))
			}
		}
		p.pos = open + end + 1
		p.skipSpace()
	}
	subjectEnd := p.pos

	// Operator.
	p.skipSpace()
	opStart := p.pos
	op := p.span(isOpByte)
	switch op {
	case "<", "<=", ">", ">=", "==", "!=":
		t.Op = op
	case "":
		p.pos = opStart
		if p.pos == len(p.src) {
			return t, fmt.Errorf("missing comparison after %q (use <, <=, >, >=, == or !=, e.g. %s)",
				strings.TrimSpace(p.src[:subjectEnd]), example)
		}
		return t, fmt.Errorf("expected a comparison (<, <=, >, >=, == or !=) at column %d, found %q",
			p.column(opStart), p.rest())
	default:
		if hint, ok := opHints[op]; ok {
			return t, fmt.Errorf("unknown operator %q at column %d: write %s", op, p.column(opStart), hint)
		}
		return t, fmt.Errorf("unknown operator %q at column %d (use <, <=, >, >=, == or !=)", op, p.column(opStart))
	}

	// Value: NUMBER[UNIT].
	p.skipSpace()
	numStart := p.pos
	num := p.span(isNumberByte)
	if num == "" {
		if p.pos == len(p.src) {
			return t, fmt.Errorf("missing value after %q (write e.g. %s)", op, example)
		}
		return t, fmt.Errorf("expected a non-negative number after %q at column %d, found %q",
			op, p.column(numStart), p.rest())
	}
	if strings.Count(num, ".") > 1 || num == "." {
		return t, fmt.Errorf("malformed number %q at column %d", num, p.column(numStart))
	}
	p.skipSpace()
	unitStart := p.pos
	// A unit starts with a letter or % and runs to the next space.
	if r, _ := utf8.DecodeRuneInString(p.src[p.pos:]); r == '%' || unicode.IsLetter(r) {
		for p.pos < len(p.src) {
			r, n := utf8.DecodeRuneInString(p.src[p.pos:])
			if unicode.IsSpace(r) {
				break
			}
			p.pos += n
		}
	}
	unitText := p.src[unitStart:p.pos]
	if len(unitText) > 1 && (unitText[0] == 'e' || unitText[0] == 'E') &&
		(isNumberByte(unitText[1]) || unitText[1] == '-' || unitText[1] == '+') {
		return t, fmt.Errorf("exponent in %q at column %d: write the number out in full (e.g. 1000 for 1e3)",
			num+unitText, p.column(numStart))
	}
	unit := strings.ToLower(unitText)
	p.skipSpace()
	if p.pos != len(p.src) {
		return t, fmt.Errorf("unexpected %q at column %d after the value (one comparison per threshold; repeat --threshold for more)",
			p.rest(), p.column(p.pos))
	}
	factor := big.NewRat(1, 1)
	if unit != "" {
		f, ok := units[unit]
		if !ok {
			return t, fmt.Errorf("unknown unit %q (%s)", unitText, unitHelp)
		}
		factor = f
	}

	// Meaning: the metric, its aggregate and the unit must agree.
	if err := t.check(num, unit); err != nil {
		return t, err
	}
	v, err := scale(num, factor)
	if err != nil {
		return t, fmt.Errorf("value %q: %w", p.src[numStart:], err)
	}
	t.Value = v
	if valueKind(t.Agg, t.Metric) == kindFraction && v > 1 {
		if unit == "%" {
			return t, fmt.Errorf("%s is a fraction and cannot exceed 100%%, found %s%%", t.Metric, num)
		}
		return t, fmt.Errorf("%s is a fraction between 0 and 1, found %s: write %s%% or a fraction such as 0.95",
			t.Metric, num, num)
	}
	return t, nil
}

// check validates a syntactically correct threshold against what spate
// measures: the metric is known, an aggregate is present exactly when the
// metric is a distribution, and the unit fits what the value measures.
func (t *Threshold) check(num, unit string) error {
	_, dist, known := lookupMetric(t.Metric)
	if !known {
		if s := suggestMetric(t.Metric); s != "" {
			return fmt.Errorf("unknown metric %q (did you mean %s?); known %s", t.Metric, s, knownList())
		}
		return fmt.Errorf("unknown metric %q; known %s", t.Metric, knownList())
	}
	value := num + unit
	if t.Input != "" && !byInput[t.Metric] {
		return fmt.Errorf("{input:%s}: %s is not kept by input length (ttft, tpot, e2e, truncation_rate, error_rate, context_rejected_rate and check_pass_rate are)", t.Input, t.Metric)
	}
	if dist && t.Agg == "" {
		return fmt.Errorf("%q is a distribution: write p99(%s) %s %s (or mean, min, max, stddev, count)",
			t.Metric, t.Metric, t.Op, value)
	}
	if !dist && t.Agg != "" {
		return fmt.Errorf("%q is a scalar and takes no aggregate: write %s %s %s", t.Metric, t.Metric, t.Op, value)
	}
	if unit == "" {
		return nil
	}
	subject := t.subject()
	switch k := valueKind(t.Agg, t.Metric); {
	case k == kindLatency && unit == "%":
		return fmt.Errorf("%% does not apply to %s, a latency: use us, ms, s or m (a plain number means ms)", subject)
	case k == kindLatency:
		return nil
	case k == kindFraction && unit == "%":
		return nil
	case k == kindFraction:
		return fmt.Errorf("unit %q does not apply to %s, a fraction: write e.g. %s %s 0.01 or 1%%", unit, subject, subject, t.Op)
	case k == kindRate:
		return fmt.Errorf("unit %q does not apply to %s, a rate per second: write a plain number, e.g. %s %s %s",
			unit, subject, subject, t.Op, num)
	default:
		return fmt.Errorf("unit %q does not apply to %s, a plain number: write %s %s %s", unit, subject, subject, t.Op, num)
	}
}

// parseAgg reads an aggregate name in any case: a percentile (p99, p99.9,
// p999) or one of mean, avg, min, max, stddev, count. col is where it starts,
// for messages.
func parseAgg(word string, col int) (agg string, pct float64, err error) {
	w := strings.ToLower(word)
	if a, ok := aggAliases[w]; ok {
		return a, 0, nil
	}
	if digits, ok := strings.CutPrefix(w, "p"); ok && digits != "" && digits[0] >= '0' && digits[0] <= '9' {
		pct, err := parsePercentile(digits)
		if err != nil {
			return "", 0, fmt.Errorf("percentile %q at column %d is %w", word, col, err)
		}
		return AggPercentile, pct, nil
	}
	if hint, ok := aggHints[w]; ok {
		return "", 0, fmt.Errorf("unknown aggregate %q at column %d (did you mean %s?)", word, col, hint)
	}
	return "", 0, fmt.Errorf("unknown aggregate %q at column %d (%s)", word, col, aggHelp)
}

// parsePercentile reads the digits after "p": NN, NN.N…, or a run of three
// or more nines meaning 99.9…, so p999 is p99.9 and p9999 is p99.99.
func parsePercentile(digits string) (float64, error) {
	intPart, frac, hasDot := strings.Cut(digits, ".")
	if intPart == "" || !allDigits(intPart) || hasDot && (frac == "" || !allDigits(frac)) {
		return 0, errors.New("malformed: write p followed by a number, e.g. p99 or p99.9")
	}
	if !hasDot && len(digits) >= 3 && strings.Trim(digits, "9") == "" {
		digits = "99." + digits[2:]
	}
	v, err := strconv.ParseFloat(digits, 64)
	if err != nil || !(v > 0 && v <= 100) {
		return 0, errors.New("out of range: a percentile is in (0, 100], e.g. p99 or p99.9")
	}
	return v, nil
}

// scale converts the decimal text num times factor to the nearest float64,
// exactly rounded, so 1.1s is 1100 ms and 0.1% is 0.001 with no binary
// rounding error.
func scale(num string, factor *big.Rat) (float64, error) {
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("malformed number %q", num)
	}
	v, _ := r.Mul(r, factor).Float64()
	if math.IsInf(v, 0) {
		return 0, errors.New("too large")
	}
	return v, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// validIdent reports whether s matches [a-z][a-z0-9_]*.
func validIdent(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// validStage reports whether s can name a stage in a selector.
func validStage(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return s != ""
}
