package threshold

import (
	"strings"

	"github.com/spate-dev/spate/internal/suggest"
)

// kind says what a metric (or an aggregate of it) measures, and so which
// units its threshold value may carry.
type kind int

const (
	kindUnknown  kind = iota
	kindLatency       // milliseconds; us, µs, ms, s, m or a plain number (= ms)
	kindPlain         // a plain number: a count, tokens per chunk
	kindFraction      // a fraction in [0, 1]; a plain number or %
	kindRate          // per second; a plain number
)

// distributions lists the distribution metrics spate records, in the order
// KnownDistributions reports them.
var distributions = []struct {
	name string
	kind kind
}{
	{"ttft", kindLatency},
	{"itl", kindLatency},
	{"tpot", kindLatency},
	{"e2e", kindLatency},
	{"ttft_intended", kindLatency},
	{"e2e_intended", kindLatency},
	{"ttft_sent", kindLatency},
	{"e2e_sent", kindLatency},
	{"schedule_lag", kindLatency},
	{"tokens_per_chunk", kindPlain},
}

// scalars lists the scalar metrics spate reports, in the order KnownScalars
// reports them.
var scalars = []struct {
	name string
	kind kind
}{
	{"error_rate", kindFraction},
	{"goodput", kindFraction},
	{"goodput_rps", kindRate},
	{"goodput_intended", kindFraction},
	{"goodput_intended_rps", kindRate},
	{"goodput_sent", kindFraction},
	{"goodput_sent_rps", kindRate},
	{"rps", kindRate},
	{"achieved_rate", kindRate},
	{"input_tps", kindRate},
	{"output_tps", kindRate},
	{"total_tps", kindRate},
	{"stps", kindRate},
	{"stps_checked", kindRate},
	{"recall", kindFraction},
	{"recall_p5", kindFraction},
	{"hit_rate", kindFraction},
	{"ice", kindPlain},
	{"truncation_rate", kindFraction},
	{"finish_length_rate", kindFraction},
	{"token_drop_rate", kindFraction},
	{"context_rejected_rate", kindFraction},
	{"check_pass_rate", kindFraction},
	{"attack_success_rate", kindFraction},
	{"interception_rate", kindFraction},
	{"leak_rate", kindFraction},
	{"false_refusal_rate", kindFraction},
	// Resilience (docs/compare.md): MSR is a fraction; the slopes are
	// plain numbers in ms/s and percentage points a minute; recovery_time
	// is a duration.
	{"msr", kindFraction},
	{"resilience_slope", kindPlain},
	{"recovery_time", kindLatency},
	{"error_rate_slope", kindPlain},
}

// KnownDistributions returns the distribution metrics a threshold may
// aggregate, such as "ttft" in p99(ttft) < 800ms. Latencies among them are in
// milliseconds; tokens_per_chunk is a plain number. The slice is a fresh copy.
func KnownDistributions() []string {
	out := make([]string, len(distributions))
	for i, d := range distributions {
		out[i] = d.name
	}
	return out
}

// KnownScalars returns the scalar metrics a threshold may compare directly,
// without an aggregate, such as "error_rate" in error_rate < 0.1%.
// error_rate and goodput are fractions in [0, 1]; the others are rates per
// second. The slice is a fresh copy.
func KnownScalars() []string {
	out := make([]string, len(scalars))
	for i, s := range scalars {
		out[i] = s.name
	}
	return out
}

// lookupMetric reports whether name is a known distribution or scalar, and
// what it measures.
func lookupMetric(name string) (k kind, distribution, ok bool) {
	for _, d := range distributions {
		if d.name == name {
			return d.kind, true, true
		}
	}
	for _, s := range scalars {
		if s.name == name {
			return s.kind, false, true
		}
	}
	return kindUnknown, false, false
}

// valueKind is what the threshold value of agg(metric) measures: a count of
// samples is a plain number whatever the metric; any other aggregate keeps the
// metric's unit.
func valueKind(agg, metric string) kind {
	if agg == AggCount {
		return kindPlain
	}
	k, _, _ := lookupMetric(metric)
	return k
}

// knownList is the message tail that lists every known metric.
func knownList() string {
	return "distributions: " + strings.Join(KnownDistributions(), ", ") +
		"; scalars: " + strings.Join(KnownScalars(), ", ")
}

// suggestMetric returns the known metric closest to an unknown name, or "".
func suggestMetric(name string) string {
	if base, ok := strings.CutSuffix(name, "_ms"); ok {
		if _, _, known := lookupMetric(base); known {
			return base
		}
	}
	return suggest.Closest(name, append(KnownDistributions(), KnownScalars()...))
}
