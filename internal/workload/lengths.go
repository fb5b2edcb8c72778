package workload

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/spate-dev/spate/internal/capread"
)

// Lengths is a distribution of token lengths. Kind is one of:
//
//	fixed      Mean
//	normal     Mean, SD (the form MEAN:SD)
//	uniform    integers from Lo to Hi, inclusive
//	lognormal  with mean Mean and standard deviation SD
//	choice     Values with Weights (a context-length sampler: 4096@0.5,...)
//	empirical  Values drawn uniformly (lengths seen in a dataset or file)
//
// Samples are rounded and clipped to at least Min (1 unless set).
type Lengths struct {
	Kind     string
	Mean, SD float64 // the distribution's mean and standard deviation
	Lo, Hi   int
	Values   []int
	Weights  []float64 // cumulative, normalised to end at 1 (choice)
	Min      int
	// Max, when above 0, clips samples to at most Max (see Capped).
	Max  int
	spec string // as parsed, for the digest
}

// ParseLengths parses a length distribution as given to --input-tokens:
//
//	512                     fixed
//	512:64                  normal, mean 512, standard deviation 64
//	normal:512:64           the same
//	uniform:100:900         uniform integers in [100, 900]
//	lognormal:512:256       lognormal with mean 512 and standard deviation 256
//	choice:4096@0.5,16384@0.3,65536@0.2   weighted values
//	empirical:FILE          lengths drawn from FILE: one integer a line
//
// A FILE is read without a context: use ParseLengthsContext where Ctrl-C
// must stop the read (a FIFO, a pipe).
func ParseLengths(s string) (Lengths, error) { return ParseLengthsContext(nil, s) }

// maxLength bounds every number of a distribution.
const maxLength = 1e12

// ParseLengthsContext is ParseLengths whose read of an empirical FILE
// ends when ctx is done (nil: never).
func ParseLengthsContext(ctx context.Context, s string) (Lengths, error) {
	s = strings.TrimSpace(s)
	kind, rest, hasKind := strings.Cut(s, ":")
	if !hasKind || isNumber(kind) {
		kind, rest = "normal", s
	}
	l := Lengths{Kind: kind, Min: 1, spec: s}
	num := func(v string) (float64, bool) {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		// Above maxLength a length is no length (and would overflow an
		// int: uniform:0:1e30 panicked; FuzzParseLengths found it).
		return f, err == nil && f >= 0 && f <= maxLength && !math.IsNaN(f)
	}
	bad := func(want string) (Lengths, error) {
		return Lengths{}, fmt.Errorf("%q: want %s", s, want)
	}
	switch kind {
	case "normal", "lognormal":
		mean, sd, hasSD := strings.Cut(rest, ":")
		m, ok := num(mean)
		if !ok {
			return bad("MEAN or MEAN:SD in tokens, e.g. 512 or 512:64 (or uniform:LO:HI, lognormal:MEAN:SD, choice:V@W,..., empirical:FILE)")
		}
		l.Mean = m
		if hasSD {
			v, ok := num(sd)
			if !ok {
				return bad("a standard deviation that is a number >= 0")
			}
			l.SD = v
		}
		if !hasSD && kind == "normal" {
			l.Kind = "fixed"
		}
		if kind == "lognormal" && (l.Mean <= 0 || !hasSD) {
			return bad("lognormal:MEAN:SD with MEAN > 0")
		}
	case "fixed":
		m, ok := num(rest)
		if !ok {
			return bad("fixed:N")
		}
		l.Mean = m
	case "uniform":
		lo, hi, _ := strings.Cut(rest, ":")
		a, ok1 := num(lo)
		b, ok2 := num(hi)
		if !ok1 || !ok2 || b < a {
			return bad("uniform:LO:HI with 0 <= LO <= HI")
		}
		l.Lo, l.Hi = int(a), int(b)
		l.Mean = (a + b) / 2
		n := b - a + 1
		l.SD = math.Sqrt((n*n - 1) / 12)
	case "choice":
		var sum float64
		for _, item := range strings.Split(rest, ",") {
			v, w, ok := strings.Cut(item, "@")
			val, ok1 := num(v)
			wt, ok2 := num(w)
			if !ok || !ok1 || !ok2 || wt <= 0 {
				return bad("choice:VALUE@WEIGHT,... with weights > 0, e.g. choice:4096@0.5,16384@0.3,65536@0.2")
			}
			l.Values = append(l.Values, int(val))
			sum += wt
			l.Weights = append(l.Weights, sum)
		}
		for i := range l.Weights {
			l.Weights[i] /= sum
		}
		prev := 0.0
		for i, v := range l.Values {
			p := l.Weights[i] - prev
			prev = l.Weights[i]
			l.Mean += p * float64(v)
		}
	case "empirical":
		vals, err := readLengths(ctx, rest)
		if err != nil {
			return Lengths{}, err
		}
		return Empirical(vals, s), nil
	default:
		return bad("a distribution: N, MEAN:SD, normal:MEAN:SD, uniform:LO:HI, lognormal:MEAN:SD, choice:V@W,... or empirical:FILE")
	}
	return l, nil
}

// Empirical is the distribution that draws uniformly from vals (e.g. the
// token lengths of a dataset's prompts); name identifies it in digests.
func Empirical(vals []int, name string) Lengths {
	l := Lengths{Kind: "empirical", Values: append([]int(nil), vals...), Min: 1, spec: name}
	var sum float64
	for _, v := range vals {
		sum += float64(v)
	}
	if len(vals) > 0 {
		l.Mean = sum / float64(len(vals))
	}
	h := digest([]byte(fmt.Sprint(vals)))
	l.spec = "empirical:" + h[:16]
	return l
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil
}

// readLengths reads one integer a line under the default file size limit
// and ctx (a FIFO's open and read end with it); errors name the file and
// line.
func readLengths(ctx context.Context, path string) ([]int, error) {
	f, r, err := capread.Open(ctx, path, Limits{}.WithDefaults().FileSize, "fileSize")
	if err != nil {
		return nil, fmt.Errorf("reading lengths: %w", err)
	}
	defer f.Close()
	return readLengthsFrom(r, path)
}

// readLengthsFrom reads one integer a line from r; name is in errors.
func readLengthsFrom(r io.Reader, path string) ([]int, error) {
	var vals []int
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		v, err := strconv.Atoi(t)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%s:%d: %q is not a length (one integer >= 0 a line)", path, line, t)
		}
		vals = append(vals, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading lengths %s: %w", path, err)
	}
	if len(vals) == 0 {
		return nil, fmt.Errorf("%s: no lengths in the file", path)
	}
	return vals, nil
}

// Sample draws a length with r.
func (l Lengths) Sample(r *rand.Rand) int {
	var v float64
	switch l.Kind {
	case "uniform":
		v = float64(l.Lo + r.IntN(l.Hi-l.Lo+1))
	case "lognormal":
		s2 := math.Log1p(l.SD * l.SD / (l.Mean * l.Mean))
		mu := math.Log(l.Mean) - s2/2
		v = math.Exp(mu + math.Sqrt(s2)*r.NormFloat64())
	case "choice":
		u := r.Float64()
		i := sort.SearchFloat64s(l.Weights, u)
		v = float64(l.Values[min(i, len(l.Values)-1)])
	case "empirical":
		if len(l.Values) == 0 {
			return max(l.Min, 0)
		}
		v = float64(l.Values[r.IntN(len(l.Values))])
	default: // fixed, normal
		v = l.Mean
		if l.SD > 0 {
			v += r.NormFloat64() * l.SD
		}
	}
	if l.Max > 0 && !(v <= float64(l.Max)) {
		v = float64(l.Max)
	}
	n := int(math.Round(v))
	if n < l.Min {
		n = l.Min
	}
	return n
}

// Capped returns l with its samples clipped to limit; a distribution whose
// mean, or whose largest value, is over the limit is an error that says
// so (only the tail of a normal or lognormal one is clipped). what names
// the setting in the error.
func (l Lengths) Capped(limit int, what string) (Lengths, error) {
	if limit <= 0 {
		return l, nil
	}
	top := l.Mean
	switch l.Kind {
	case "uniform":
		top = float64(l.Hi)
	case "choice", "empirical":
		for _, v := range l.Values {
			top = max(top, float64(v))
		}
	}
	if top > float64(limit) {
		return Lengths{}, fmt.Errorf("%s %s: %.0f tokens is over the promptTokens limit of %d: lower it, or raise the limit with --limit promptTokens=N (limits.promptTokens)", what, l.spec, top, limit)
	}
	l.Max = limit
	return l, nil
}

// IsSet reports whether the distribution asks for anything (a mean above 0).
func (l Lengths) IsSet() bool { return l.Mean > 0 }

// String is the distribution as it was given.
func (l Lengths) String() string { return l.key() }

// key identifies the distribution in digests.
func (l Lengths) key() string {
	if l.spec != "" {
		return l.spec
	}
	return fmt.Sprintf("%g:%g", l.Mean, l.SD)
}
