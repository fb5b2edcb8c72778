package metrics

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/verdict/threshold"
)

func TestBucketNames(t *testing.T) {
	if !reflect.DeepEqual(BucketNames(), threshold.InputBuckets) {
		t.Fatalf("metrics %v, threshold %v", BucketNames(), threshold.InputBuckets)
	}
	for n, want := range map[int]string{0: "0-512", 511: "0-512", 512: "512-1k", 2048: "2k-4k", 4095: "2k-4k", 131071: "64k-128k", 131072: "128k+"} {
		if got := BucketName(n); got != want {
			t.Errorf("BucketName(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestOutputFigures plants answers of known lengths and finish reasons in
// two input buckets and checks the truncation, drop and context figures
// and their thresholds.
func TestOutputFigures(t *testing.T) {
	rc := New(Config{Start: t0, Mode: "closed"})
	ans := func(seq uint64, in, asked, got int, finish string, exact bool) *record.Record {
		r := mk(seq, 0, 0, 10*time.Millisecond, time.Millisecond, got)
		r.InputTokens, r.RequestedOutput, r.FinishReason, r.ExactOutput = in, asked, finish, exact
		return r
	}
	var recs []*record.Record
	// 1k-2k: 6 answers of 20 asked: 4 whole ("length" at the cap), 2 cut
	// at 10 (truncated); exact lengths asked (ignore_eos).
	for i := range 6 {
		got := 20
		if i < 2 {
			got = 10
		}
		recs = append(recs, ans(uint64(i), 1500, 20, got, "length", true))
	}
	// Exact lengths asked, fewer tokens came: truncated whatever the
	// finish_reason, stop or none.
	recs = append(recs, ans(7, 1500, 20, 15, "stop", true), ans(8, 1500, 20, 12, "", true))
	// 4k-8k: 3 stop answers, 1 without a finish_reason, one context
	// rejection, one 500 of an exact request that sent 5 tokens first.
	for i := range 3 {
		recs = append(recs, ans(uint64(10+i), 5000, 50, 30, "stop", false))
	}
	recs = append(recs, ans(20, 5000, 50, 30, "", false))
	rej := ans(21, 6000, 50, 0, "", false)
	rej.Fail(record.HTTPStatus(400), `HTTP 400: {"error":{"message":"This model's maximum context length is 4096 tokens"}}`, rej.Sent)
	rej.Status = 400
	broken := ans(22, 5000, 20, 0, "", true)
	broken.Chunks = 5
	broken.Fail(record.StreamBroken, "cut", broken.Sent.Add(time.Second))
	recs = append(recs, rej, broken)
	feed(rc, recs...)
	sc, hist, err := rc.Scenario("s", t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	o := sc.Output
	if o == nil || !reflect.DeepEqual(o.FinishReasons, map[string]int{"length": 6, "stop": 4, "missing": 2}) {
		t.Fatalf("output %+v", o)
	}
	if len(o.Warnings) != 1 || !strings.Contains(o.Warnings[0], "1 answers asked for exactly max_tokens (ignore_eos) ended with finish_reason stop") {
		t.Errorf("warnings %q", o.Warnings)
	}
	// Truncated: 4 of the 11 answers with a finish_reason or an exact
	// length; finish length: 6 of the 10 with a finish_reason.
	if o.Truncated != 4 || math.Abs(*o.TruncationRate-4.0/11) > 1e-12 || math.Abs(*o.FinishLengthRate-6.0/10) > 1e-12 {
		t.Errorf("truncation %d %v %v", o.Truncated, *o.TruncationRate, *o.FinishLengthRate)
	}
	// Dropped: 2×10 of the cut answers, 5 + 8 of the short ones, 15 of the
	// broken one, of 8×20 + 20.
	if o.ExactRequests != 9 || o.DroppedTokens != 48 || math.Abs(*o.TokenDropRate-48.0/180) > 1e-12 {
		t.Errorf("drop %d %d %v", o.ExactRequests, o.DroppedTokens, *o.TokenDropRate)
	}
	if len(o.Context) != 2 || o.Context[0].Bucket != "1k-2k" || o.Context[1].Bucket != "4k-8k" {
		t.Fatalf("context %+v", o.Context)
	}
	b1, b2 := o.Context[0], o.Context[1]
	if b1.Requests != 8 || b1.Truncated != 4 || math.Abs(b1.TruncationRate-0.5) > 1e-12 || b1.Metrics["ttft_ms"].Count != 8 {
		t.Errorf("1k-2k %+v", b1)
	}
	if b2.Requests != 6 || b2.Failed != 2 || b2.ContextRejected != 1 || b2.TruncationRate != 0 || b2.FromTokens != 4096 || b2.ToTokens != 8192 {
		t.Errorf("4k-8k %+v", b2)
	}
	for _, tc := range []struct {
		expr string
		want float64
	}{
		{"truncation_rate < 1", 4.0 / 11},
		{"token_drop_rate < 1", 48.0 / 180},
		{"finish_length_rate < 1", 6.0 / 10},
		{"context_rejected_rate < 1", 1.0 / 14},
		{"truncation_rate{input:1k-2k} < 1", 0.5},
		{"error_rate{input:4k-8k} < 1", 2.0 / 6},
		{"context_rejected_rate{input:4k-8k} < 1", 1.0 / 6},
		{"count(e2e){input:1k-2k} < 100", 8},
	} {
		th, err := threshold.Parse(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := Lookup(&sc, hist, th.Agg, th.Percentile, th.LookupName())
		if !ok || math.Abs(v-tc.want) > 1e-12 {
			t.Errorf("%s: %v %v, want %v", tc.expr, v, ok, tc.want)
		}
	}
	if v, ok := Lookup(&sc, hist, "", 0, "truncation_rate@input:32k-64k"); !ok || !math.IsNaN(v) {
		t.Errorf("an empty bucket: %v %v, want NaN", v, ok)
	}
}

// TestICEFromPlantedTurns plants three conversations' per-turn entropies
// and checks ICE = their sample standard deviation (n − 1), per intent too.
func TestICEFromPlantedTurns(t *testing.T) {
	rc := New(Config{Start: t0, Mode: "closed"})
	convs := []struct {
		intent string
		h      []float64
	}{
		{"faq", []float64{0.4, 1.1, 2.3}},
		{"faq", []float64{1, 1, 1, 1}},
		{"chat", []float64{0.5, 1.5}},
		{"chat", []float64{0.8}}, // one turn: no ICE
	}
	for c, conv := range convs {
		for i, h := range conv.h {
			r := mk(uint64(c), time.Duration(i)*time.Second, 0, time.Millisecond, time.Millisecond, 3)
			r.Intent, r.Entropy, r.EntropyTokens, r.TailMass, r.EntropyBound = conv.intent, h, 3, 0.01, 0.1
			feed(rc, r)
		}
	}
	sc, _, _ := rc.Scenario("s", t0.Add(5*time.Second))
	ice := sc.ICE
	std := func(xs ...float64) float64 {
		var m float64
		for _, x := range xs {
			m += x
		}
		m /= float64(len(xs))
		var ss float64
		for _, x := range xs {
			ss += (x - m) * (x - m)
		}
		return math.Sqrt(ss / float64(len(xs)-1))
	}
	a, b, c := std(0.4, 1.1, 2.3), 0.0, std(0.5, 1.5)
	if ice == nil || ice.Conversations != 3 || ice.Single != 1 || ice.Turns != 10 || math.Abs(ice.Mean-(a+b+c)/3) > 1e-12 || math.Abs(ice.Max-a) > 1e-12 {
		t.Fatalf("ice %+v, want mean %v of %v %v %v", ice, (a+b+c)/3, a, b, c)
	}
	if f := ice.ByIntent["faq"]; f.Conversations != 2 || math.Abs(f.Mean-(a+b)/2) > 1e-12 {
		t.Errorf("faq %+v", f)
	}
	if math.Abs(ice.TailMassMean-0.01) > 1e-12 || ice.ErrorBound != 0.1 {
		t.Errorf("tail %v bound %v", ice.TailMassMean, ice.ErrorBound)
	}
	if v, ok := Lookup(&sc, nil, "", 0, "ice"); !ok || v != ice.Mean {
		t.Errorf("Lookup(ice) = %v %v", v, ok)
	}
}
