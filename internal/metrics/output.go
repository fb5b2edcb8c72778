package metrics

import (
	"fmt"
	"math"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/result"
)

// How answers ended, and the context-window curve (seed 000 §4.1):
// finish_reason counts; the truncation rate (answers the server ended with
// "length" before the max_tokens asked); the token drop rate (tokens asked
// for exactly, with ignore_eos, that never came); and TTFT, TPOT, E2E,
// truncation and check pass rate by input-length bucket.

// ContextBuckets are the upper edges, in input tokens, of the input-length
// buckets: [0, 512), [512, 1k), ..., [64k, 128k), then 128k and more. They
// hold the seed's 512/2048/4096 points and its 4k/16k/64k/128k sampler.
var ContextBuckets = []int{512, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10}

// BucketName names the input-length bucket of n tokens, e.g. "1k-2k",
// "0-512", "128k+".
func BucketName(n int) string {
	return bucketName(bucketOf(n))
}

func bucketOf(n int) int {
	for i, hi := range ContextBuckets {
		if n < hi {
			return i
		}
	}
	return len(ContextBuckets)
}

func tokensName(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return fmt.Sprint(n/1024, "k")
	}
	return fmt.Sprint(n)
}

func bucketName(i int) string {
	lo := 0
	if i > 0 {
		lo = ContextBuckets[i-1]
	}
	if i == len(ContextBuckets) {
		return tokensName(lo) + "+"
	}
	return tokensName(lo) + "-" + tokensName(ContextBuckets[i])
}

// IsBucket reports whether name is an input-length bucket's name.
func IsBucket(name string) bool {
	for i := 0; i <= len(ContextBuckets); i++ {
		if bucketName(i) == name {
			return true
		}
	}
	return false
}

// BucketNames are the buckets' names, in order.
func BucketNames() []string {
	var out []string
	for i := 0; i <= len(ContextBuckets); i++ {
		out = append(out, bucketName(i))
	}
	return out
}

// bucketHistKey is the key of a bucket's histogram of metric (e.g.
// "e2e_ms") in the result's histograms: "ctx/1k-2k/e2e_ms".
func bucketHistKey(bucket, metric string) string { return "ctx/" + bucket + "/" + metric }

// outputAgg accumulates how a stage's answers ended.
type outputAgg struct {
	finish                map[string]int
	withFinish            int // successes with a finish_reason
	judged                int // successes with one, or asked for an exact length
	exactStop             int // truncated answers of an exact length that ended with stop
	length, truncated     int
	exact                 int   // requests that asked for an exact length
	expected, dropped     int64 // their tokens asked for, and missing
	buckets               []*contextAgg
	rejected, rejectedAll int
}

// contextAgg is one input-length bucket.
type contextAgg struct {
	requests, failed, rejected, ok, truncated int
	checked, passed                           int
	ttft, tpot, e2e                           *Hist
}

func newOutputAgg() *outputAgg {
	a := &outputAgg{finish: map[string]int{}}
	for range len(ContextBuckets) + 1 {
		a.buckets = append(a.buckets, nil)
	}
	return a
}

func (a *outputAgg) bucket(n int) *contextAgg {
	i := bucketOf(n)
	if a.buckets[i] == nil {
		lat := func() *Hist { return &Hist{h: hdr.New(1, latencyMax, groupSigFigs), scale: 1000} }
		a.buckets[i] = &contextAgg{ttft: lat(), tpot: lat(), e2e: lat()}
	}
	return a.buckets[i]
}

// contextRejected reports a request the server refused for its context
// length (OpenAI's and vLLM's 400 "maximum context length").
func contextRejected(rec *record.Record) bool {
	if rec.Status != 400 {
		return false
	}
	m := strings.ToLower(rec.ErrMsg)
	return strings.Contains(m, "context length") || strings.Contains(m, "context_length")
}

// Truncated reports an answer the server cut short: fewer output tokens
// than the max_tokens asked, and it ended with finish_reason length or it
// asked for exactly max_tokens (ignore_eos).
func Truncated(rec *record.Record) bool {
	return rec.RequestedOutput > 0 && rec.OutputTokens < rec.RequestedOutput && (rec.FinishReason == "length" || rec.ExactOutput)
}

// add counts a finished, measured request (not cancelled).
func (a *outputAgg) add(rec *record.Record) {
	b := a.bucket(rec.InputTokens)
	b.requests++
	if rec.ExactOutput && rec.RequestedOutput > 0 {
		a.exact++
		a.expected += int64(rec.RequestedOutput)
		got := rec.OutputTokens
		if rec.Failed() {
			got = rec.Chunks // what came before the failure
		}
		a.dropped += int64(max(0, rec.RequestedOutput-got))
	}
	if rec.Failed() {
		b.failed++
		if contextRejected(rec) {
			b.rejected++
			a.rejected++
		}
		return
	}
	b.ok++
	reason := rec.FinishReason
	if reason == "" {
		reason = "missing"
	} else {
		a.withFinish++
	}
	a.finish[reason]++
	if rec.FinishReason != "" || (rec.ExactOutput && rec.RequestedOutput > 0) {
		a.judged++
	}
	if rec.FinishReason == "length" {
		a.length++
	}
	if Truncated(rec) {
		a.truncated++
		b.truncated++
		if rec.FinishReason == "stop" {
			a.exactStop++
		}
	}
	if len(rec.Checks) > 0 {
		b.checked++
		if rec.ChecksPassed() {
			b.passed++
		}
	}
	if t, ok := rec.TTFT(); ok {
		b.ttft.recordDuration(t)
	}
	if t, ok := rec.TPOT(); ok {
		b.tpot.recordDuration(t)
	}
	b.e2e.recordDuration(rec.E2E())
}

// result fills the stage's output figures and adds the buckets'
// histograms to enc; it is nil when no answer carried a finish_reason and
// none asked for an exact length.
func (a *outputAgg) result(enc map[string]string) (*result.Output, error) {
	if len(a.finish) == 0 && a.exact == 0 && a.rejected == 0 {
		return nil, nil
	}
	o := &result.Output{FinishReasons: a.finish, FinishLength: a.length, Truncated: a.truncated, ExactRequests: a.exact,
		ContextRejected: a.rejected, Judged: a.judged, ExpectedTokens: a.expected}
	if a.judged > 0 {
		o.TruncationRate = ratio(a.truncated, a.judged)
	}
	if a.withFinish > 0 {
		o.FinishLengthRate = ratio(a.length, a.withFinish)
	} else if len(a.finish) > 0 {
		o.Warnings = append(o.Warnings, noFinishWarning(a.judged))
	}
	if a.exactStop > 0 {
		o.Warnings = append(o.Warnings, fmt.Sprintf("%d answers asked for exactly max_tokens (ignore_eos) ended with finish_reason stop before it: counted truncated, but the server may not honour ignore_eos (then run with --ignore-eos false)", a.exactStop))
	}
	if a.expected > 0 {
		v := float64(a.dropped) / float64(a.expected)
		o.TokenDropRate = &v
		o.DroppedTokens = a.dropped
	}
	for i, b := range a.buckets {
		if b == nil {
			continue
		}
		cb := result.ContextBucket{Bucket: bucketName(i), Requests: b.requests, Failed: b.failed, ContextRejected: b.rejected,
			Truncated: b.truncated, Checked: b.checked, Passed: b.passed, Metrics: map[string]result.Dist{}}
		if i > 0 {
			cb.FromTokens = ContextBuckets[i-1]
		}
		if i < len(ContextBuckets) {
			cb.ToTokens = ContextBuckets[i]
		}
		if b.ok > 0 {
			cb.TruncationRate = float64(b.truncated) / float64(b.ok)
		}
		if b.checked > 0 {
			cb.CheckPassRate = ratio(b.passed, b.checked)
		}
		for name, h := range map[string]*Hist{TTFT: b.ttft, TPOT: b.tpot, E2E: b.e2e} {
			if h.h.TotalCount() == 0 {
				continue
			}
			cb.Metrics[name] = h.Summary()
			e, err := h.Encode()
			if err != nil {
				return nil, err
			}
			enc[bucketHistKey(cb.Bucket, name)] = e
		}
		o.Context = append(o.Context, cb)
	}
	return o, nil
}

func noFinishWarning(judged int) string {
	if judged == 0 {
		return "no answer carried a finish_reason: there is no truncation rate"
	}
	return "no answer carried a finish_reason: the truncation rate counts only answers of an exact length (ignore_eos)"
}

func ratio(k, n int) *float64 {
	v := float64(k) / float64(n)
	return &v
}

// outputLookup is a scalar of the output figures for thresholds:
// truncation_rate, finish_length_rate, token_drop_rate and
// context_rejected_rate, or, with a bucket, its truncation_rate,
// error_rate, context_rejected_rate and check_pass_rate. ok is false for
// another metric.
func outputLookup(sc *result.Scenario, metric, bucket string) (float64, bool) {
	o := sc.Output
	deref := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	if bucket != "" {
		var cb *result.ContextBucket
		if o != nil {
			for i := range o.Context {
				if o.Context[i].Bucket == bucket {
					cb = &o.Context[i]
				}
			}
		}
		switch metric {
		case "truncation_rate", "error_rate", "context_rejected_rate", "check_pass_rate":
		default:
			return 0, false
		}
		if cb == nil || cb.Requests == 0 {
			return math.NaN(), true // no request of that length
		}
		switch metric {
		case "truncation_rate":
			if cb.Requests == cb.Failed {
				return math.NaN(), true
			}
			return cb.TruncationRate, true
		case "error_rate":
			return float64(cb.Failed) / float64(cb.Requests), true
		case "context_rejected_rate":
			return float64(cb.ContextRejected) / float64(cb.Requests), true
		}
		return deref(cb.CheckPassRate), true
	}
	switch metric {
	case "truncation_rate", "finish_length_rate", "token_drop_rate":
		if o == nil {
			return math.NaN(), true
		}
		switch metric {
		case "truncation_rate":
			return deref(o.TruncationRate), true
		case "finish_length_rate":
			return deref(o.FinishLengthRate), true
		}
		return deref(o.TokenDropRate), true
	case "context_rejected_rate":
		n := sc.Requests.Succeeded + sc.Requests.Failed
		if n == 0 {
			return math.NaN(), true
		}
		rej := 0
		if o != nil {
			rej = o.ContextRejected
		}
		return float64(rej) / float64(n), true
	case "check_pass_rate":
		if sc.Checks == nil {
			return math.NaN(), true
		}
		return sc.Checks.PassRate, true
	}
	return 0, false
}
