package observe

import (
	"fmt"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"

	"github.com/spate-dev/spate/result"
)

// Scrape is one round of scraping during a stage: when it began, in
// seconds from the stage's start, and the families it got (nil when no
// endpoint answered with parsable text).
type Scrape struct {
	OffsetS  float64
	Families Families
}

// Compute turns a stage's scrapes into named series: every known series
// whose metrics were scraped, and one per custom selector (its kind taken
// from the metric's type: gauges as they are, counters as per-second rates
// named rate(SELECTOR) in the counter's unit per second (see rateUnit),
// histograms as p50(SELECTOR) and p99(SELECTOR)). A value that is NaN
// or ±Inf (the exposition format allows them, and a summary with no
// observations reports NaN) is absent from its series, as JSON has no
// number for it. The warnings name custom selectors that matched nothing
// and series that had such values.
func Compute(scrapes []Scrape, custom []Selector) (map[string]result.ServerSeries, []string) {
	out := map[string]result.ServerSeries{}
	var dropped []string // series that had NaN or ±Inf values
	for _, sp := range known {
		if _, done := out[sp.name]; done {
			continue
		}
		if _, done := out[sp.name+"_p50"+unitSuffix(sp.unit)]; done {
			continue
		}
		for _, s := range sp.sources {
			if !present(scrapes, s.sel) {
				continue
			}
			if n := add(out, sp.name, sp.unit, sp.kind, sp.combine, s, scrapes, false); n > 0 {
				dropped = append(dropped, fmt.Sprintf("%s (%s): %d", sp.name, s.sel, n))
			}
			break
		}
	}
	var warns []string
	for _, sel := range custom {
		typ, ok := familyType(scrapes, sel)
		if !ok {
			warns = append(warns, fmt.Sprintf("--scrape-metric %s: no scrape had a sample with that name and labels; check the name with curl on the endpoint", sel))
			continue
		}
		s := source{sel: sel, scale: 1}
		n := 0
		switch typ {
		case dto.MetricType_COUNTER:
			n = add(out, "rate("+sel.String()+")", rateUnit(family(scrapes, sel)), rateKind, sumOf, s, scrapes, true)
		case dto.MetricType_HISTOGRAM:
			n = add(out, sel.String(), "value", quantileKind, sumOf, s, scrapes, true)
		case dto.MetricType_GAUGE, dto.MetricType_UNTYPED:
			n = add(out, sel.String(), "value", gaugeKind, sumOf, s, scrapes, true)
		default:
			warns = append(warns, fmt.Sprintf("--scrape-metric %s: a %s is not supported; select a gauge, counter or histogram", sel, typ))
		}
		if n > 0 {
			dropped = append(dropped, fmt.Sprintf("--scrape-metric %s: %d", sel, n))
		}
	}
	for _, d := range dropped {
		warns = append(warns, "the server reported NaN or ±Inf, which count as absent, for "+d+" values")
	}
	return out, warns
}

func unitSuffix(unit string) string {
	if unit == "ms" {
		return "_ms"
	}
	return ""
}

// add computes one spec's series from its source into out; custom ones
// (from --scrape-metric) are named after their selector. It returns how
// many values were NaN or ±Inf, which it leaves absent.
func add(out map[string]result.ServerSeries, name, unit string, k kind, c combine, s source, scrapes []Scrape, custom bool) (nonFinite int) {
	ptr := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			nonFinite++
			return nil
		}
		return &v
	}
	scale := s.scale
	if scale == 0 {
		scale = 1
	}
	switch k {
	case gaugeKind:
		vals := make([]*float64, len(scrapes))
		for i, sc := range scrapes {
			if v, ok := gauge(sc.Families, s.sel, c); ok {
				vals[i] = ptr(v * scale)
			}
		}
		out[name] = result.ServerSeries{Metric: s.sel.String(), Unit: unit, Values: vals}
	case rateKind:
		vals := make([]*float64, len(scrapes))
		for i := 1; i < len(scrapes); i++ {
			dt := scrapes[i].OffsetS - scrapes[i-1].OffsetS
			if d, ok := increase(scrapes[i-1].Families, scrapes[i].Families, s.sel); ok && dt > 0 {
				vals[i] = ptr(d / dt * scale)
			}
		}
		out[name] = result.ServerSeries{Metric: s.sel.String(), Unit: unit, Values: vals}
	case ratioKind:
		vals := make([]*float64, len(scrapes))
		for i := 1; i < len(scrapes); i++ {
			num, ok1 := increase(scrapes[i-1].Families, scrapes[i].Families, s.sel)
			den, ok2 := increase(scrapes[i-1].Families, scrapes[i].Families, s.den)
			if ok1 && ok2 && den > 0 {
				vals[i] = ptr(num / den)
			}
		}
		out[name] = result.ServerSeries{Metric: s.sel.String() + " / " + s.den.String(), Unit: unit, Values: vals}
	case quantileKind:
		p50 := make([]*float64, len(scrapes))
		p99 := make([]*float64, len(scrapes))
		for i := 1; i < len(scrapes); i++ {
			b, ok := bucketIncrease(scrapes[i-1].Families, scrapes[i].Families, s.sel)
			if !ok {
				continue
			}
			if v, ok := b.quantile(0.5); ok {
				p50[i] = ptr(v * scale)
			}
			if v, ok := b.quantile(0.99); ok {
				p99[i] = ptr(v * scale)
			}
		}
		// Known histograms are named name_p50_ms; custom ones p50(sel).
		n50, n99 := name+"_p50"+unitSuffix(unit), name+"_p99"+unitSuffix(unit)
		if custom {
			n50, n99 = "p50("+name+")", "p99("+name+")"
		}
		out[n50] = result.ServerSeries{Metric: s.sel.String(), Unit: unit, Values: p50}
		out[n99] = result.ServerSeries{Metric: s.sel.String(), Unit: unit, Values: p99}
	}
	return nonFinite
}

// present reports whether any scrape has a sample the selector matches.
func present(scrapes []Scrape, sel Selector) bool {
	_, ok := familyType(scrapes, sel)
	return ok
}

// familyType is the type of the first family in the scrapes with a sample
// the selector matches.
func familyType(scrapes []Scrape, sel Selector) (dto.MetricType, bool) {
	mf := family(scrapes, sel)
	if mf == nil {
		return 0, false
	}
	return mf.GetType(), true
}

// gauge is the combined value of the matching samples of one scrape.
func gauge(f Families, sel Selector, c combine) (float64, bool) {
	mf := f[sel.Name]
	if mf == nil {
		return 0, false
	}
	var acc float64
	n := 0
	for _, m := range mf.GetMetric() {
		if !sel.matches(m) {
			continue
		}
		v, ok := scalar(m)
		if !ok {
			continue
		}
		switch {
		case n == 0:
			acc = v
		case c == sumOf:
			acc += v
		case v > acc:
			acc = v
		}
		n++
	}
	return acc, n > 0
}

// increase is how much the matching counters grew from prev to cur,
// summed over the series present in both; a series that went down was
// reset (the server restarted) and grew by its current value.
func increase(prev, cur Families, sel Selector) (float64, bool) {
	before := counters(prev, sel)
	after := counters(cur, sel)
	var d float64
	n := 0
	for sig, v := range after {
		p, ok := before[sig]
		if !ok {
			continue
		}
		if v < p {
			d += v
		} else {
			d += v - p
		}
		n++
	}
	return d, n > 0
}

// counters maps each matching series' signature to its value.
func counters(f Families, sel Selector) map[string]float64 {
	mf := f[sel.Name]
	if mf == nil {
		return nil
	}
	out := map[string]float64{}
	for _, m := range mf.GetMetric() {
		if !sel.matches(m) {
			continue
		}
		if v, ok := scalar(m); ok {
			out[signature(m)] = v
		}
	}
	return out
}

// buckets is a classic histogram's cumulative counts by upper bound.
type buckets struct {
	upper []float64 // ascending, may end with +Inf
	cum   []float64
	count float64
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linear interpolation inside the bucket that holds the rank; a rank
// in the +Inf bucket gives the highest finite bound.
func (b buckets) quantile(q float64) (float64, bool) {
	if b.count <= 0 || len(b.upper) == 0 {
		return 0, false
	}
	rank := q * b.count
	for i, up := range b.upper {
		if b.cum[i] < rank {
			continue
		}
		if math.IsInf(up, 1) {
			if i == 0 {
				return 0, false
			}
			return b.upper[i-1], true
		}
		lower, prevCum := 0.0, 0.0
		if i > 0 {
			lower, prevCum = b.upper[i-1], b.cum[i-1]
		} else if up <= 0 {
			return up, true
		}
		if b.cum[i] == prevCum {
			return up, true
		}
		return lower + (up-lower)*(rank-prevCum)/(b.cum[i]-prevCum), true
	}
	// The rank lies above the last bucket given: the implicit +Inf bucket.
	return b.upper[len(b.upper)-1], true
}

// bucketIncrease is the histogram of the observations made between prev
// and cur: bucket counts' increases summed over the matching series present
// in both (a series whose count went down was reset: its current counts).
func bucketIncrease(prev, cur Families, sel Selector) (buckets, bool) {
	before := histograms(prev, sel)
	after := histograms(cur, sel)
	acc := map[float64]float64{}
	var count float64
	n := 0
	for sig, h := range after {
		p, ok := before[sig]
		if !ok {
			continue
		}
		reset := h.GetSampleCount() < p.GetSampleCount()
		prevCum := map[float64]float64{}
		if !reset {
			for _, b := range p.GetBucket() {
				prevCum[b.GetUpperBound()] = float64(b.GetCumulativeCount())
			}
			count += float64(h.GetSampleCount() - p.GetSampleCount())
		} else {
			count += float64(h.GetSampleCount())
		}
		for _, b := range h.GetBucket() {
			acc[b.GetUpperBound()] += float64(b.GetCumulativeCount()) - prevCum[b.GetUpperBound()]
		}
		n++
	}
	if n == 0 {
		return buckets{}, false
	}
	out := buckets{count: count}
	for up := range acc {
		out.upper = append(out.upper, up)
	}
	sort.Float64s(out.upper)
	for _, up := range out.upper {
		out.cum = append(out.cum, acc[up])
	}
	return out, true
}

// histograms maps each matching series' signature to its histogram.
func histograms(f Families, sel Selector) map[string]*dto.Histogram {
	mf := f[sel.Name]
	if mf == nil {
		return nil
	}
	out := map[string]*dto.Histogram{}
	for _, m := range mf.GetMetric() {
		if m.Histogram != nil && sel.matches(m) {
			out[signature(m)] = m.Histogram
		}
	}
	return out
}
