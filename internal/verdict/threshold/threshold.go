// Package threshold parses and evaluates the pass/fail expressions a CI
// pipeline gates a run on, given as `spate run --threshold 'EXPR'`.
//
// An expression is
//
//	[AGG(]METRIC[)] OP NUMBER[UNIT]
//
// with any whitespace between the parts and names in any case, for example
// p99(ttft) < 800ms, p99.9(e2e) <= 5s, error_rate < 0.1% or rps >= 10.
//
// AGG is a percentile (p50, p90, p95, p99, p99.9, p999 = p99.9, or any pNN or
// pNN.N in (0, 100]), mean (alias avg), min, max, stddev or count. A
// distribution metric (see KnownDistributions) needs an aggregate; a scalar
// metric (see KnownScalars) takes none.
//
// OP is one of < <= > >= == !=.
//
// Latency values are held in milliseconds, the unit of every latency figure in
// the result; the units us (or µs), ms, s and m (minutes) convert to it, and a
// plain number on a latency means milliseconds. A value with % is a fraction
// (95% is 0.95) and applies only to error_rate and goodput, which may also be
// written as plain fractions (0.001). Counts, tokens per chunk and rates are
// plain numbers.
//
// A trigger (ParseTrigger, see trigger.go) is the other form: conditions
// joined by and, changes against a baseline (delta, rel) and a time they
// must hold (for 2m), watched while a run goes on.
//
// Stage: verdict.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package threshold

import (
	"strconv"
	"strings"
)

// Aggregate names as held in Threshold.Agg. Scalar metrics have Agg "".
const (
	// AggPercentile is a percentile; Threshold.Percentile says which.
	AggPercentile = "percentile"
	// AggMean is the arithmetic mean (written mean or avg).
	AggMean = "mean"
	// AggMin is the smallest sample.
	AggMin = "min"
	// AggMax is the largest sample.
	AggMax = "max"
	// AggStddev is the standard deviation of the samples.
	AggStddev = "stddev"
	// AggCount is the number of samples; its threshold is a plain number.
	AggCount = "count"
)

// Threshold is one parsed pass/fail expression.
type Threshold struct {
	// Expr is the expression as the user wrote it, surrounding space trimmed.
	Expr string
	// Agg is the canonical aggregate: one of the Agg* constants, or "" for a
	// scalar metric.
	Agg string
	// Percentile is the percentile in (0, 100] when Agg is AggPercentile
	// (99.9 for p99.9 or p999), else 0.
	Percentile float64
	// Metric is the metric name in lower case, e.g. "ttft" or "error_rate".
	Metric string
	// Stage, when set by a {stage:NAME} selector, limits the threshold to
	// the stage of that name; empty means every stage.
	Stage string
	// Op is the comparison: one of < <= > >= == !=.
	Op string
	// Value is the limit: milliseconds for latencies, a fraction for
	// error_rate and goodput, else a plain number.
	Value float64
	// Input, when set by an {input:BUCKET} selector, limits the figure to
	// the requests of that input-length bucket (e.g. 2k-4k; see
	// InputBuckets).
	Input string
}

// InputBuckets are the input-length buckets an {input:BUCKET} selector
// names: the metrics package's (its ContextBuckets).
var InputBuckets = []string{"0-512", "512-1k", "1k-2k", "2k-4k", "4k-8k", "8k-16k", "16k-32k", "32k-64k", "64k-128k", "128k+"}

func inputBucket(s string) bool {
	for _, b := range InputBuckets {
		if b == s {
			return true
		}
	}
	return false
}

// byInput are the metrics kept per input-length bucket.
var byInput = map[string]bool{"ttft": true, "tpot": true, "e2e": true, "truncation_rate": true,
	"error_rate": true, "context_rejected_rate": true, "check_pass_rate": true}

// LookupName is the metric name a Source is asked for: Metric, or with an
// {input:BUCKET} selector, Metric@input:BUCKET.
func (t Threshold) LookupName() string {
	if t.Input == "" {
		return t.Metric
	}
	return t.Metric + "@input:" + t.Input
}

// String returns the canonical form of t, which Parse reads back to an equal
// Threshold (apart from Expr): a single space around the operator, the
// percentile written pNN[.N], latencies in ms, and fractions as plain numbers
// (goodput >= 95% becomes goodput >= 0.95).
func (t Threshold) String() string {
	var b strings.Builder
	b.WriteString(t.subject())
	b.WriteByte(' ')
	b.WriteString(t.Op)
	b.WriteByte(' ')
	b.WriteString(strconv.FormatFloat(t.Value, 'f', -1, 64))
	if valueKind(t.Agg, t.Metric) == kindLatency {
		b.WriteString("ms")
	}
	return b.String()
}

// subject is the left-hand side: "p99(ttft)", "mean(itl)", "rps" or
// "p99(e2e){stage:peak}".
func (t Threshold) subject() string {
	sel := ""
	if t.Stage != "" {
		sel = "{stage:" + t.Stage + "}"
	}
	if t.Input != "" {
		sel += "{input:" + t.Input + "}"
	}
	switch t.Agg {
	case "":
		return t.Metric + sel
	case AggPercentile:
		return "p" + strconv.FormatFloat(t.Percentile, 'f', -1, 64) + "(" + t.Metric + ")" + sel
	default:
		return t.Agg + "(" + t.Metric + ")" + sel
	}
}
