package metrics

import (
	"math"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/result"
)

var t0 = time.Unix(1_700_000_000, 0)

// mk makes a successful streamed record: sent at off, first token after
// ttft, then n−1 more tokens every itl.
func mk(seq uint64, off, lag, ttft, itl time.Duration, n int) *record.Record {
	r := &record.Record{}
	r.Reset()
	r.Seq = seq
	r.Intended = t0.Add(off)
	r.Sent = r.Intended.Add(lag)
	r.Written = r.Sent.Add(100 * time.Microsecond)
	r.FirstToken = r.Sent.Add(ttft)
	r.FirstAnswer = r.FirstToken
	for i := 1; i < n; i++ {
		r.Gaps = append(r.Gaps, itl)
	}
	r.End = r.FirstToken.Add(time.Duration(n-1) * itl)
	r.Chunks, r.OutputTokens, r.OutputSource, r.UsageTokens = n, n, record.TokensUsage, n
	r.InputTokens = 100
	return r
}

func feed(rc *Recorder, recs ...*record.Record) {
	for _, r := range recs {
		rc.Sent(r.Sent, r.Intended, r.Warmup)
		rc.Record(r)
	}
}

func approx(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %v, want %v ± %v", what, got, want, tol)
	}
}

func TestKnownFigures(t *testing.T) {
	rc := New(Config{Start: t0, Mode: "open", Arrival: "constant", TargetRate: 10, SLO: SLO{TTFT: 150 * time.Millisecond}})
	// 10 requests at 10/s: TTFT 100 ms for 8, 200 ms for 2; 11 tokens every 20 ms.
	for i := 0; i < 10; i++ {
		ttft := 100 * time.Millisecond
		if i >= 8 {
			ttft = 200 * time.Millisecond
		}
		feed(rc, mk(uint64(i), time.Duration(i)*100*time.Millisecond, time.Millisecond, ttft, 20*time.Millisecond, 11))
	}
	bad := mk(10, 950*time.Millisecond, time.Millisecond, 0, 0, 1)
	bad.Fail(record.HTTPStatus(503), "HTTP 503: overloaded", bad.Sent.Add(5*time.Millisecond))
	bad.End = bad.Sent.Add(5 * time.Millisecond)
	feed(rc, bad)
	sc, hist, err := rc.Scenario("main", t0.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	m := sc.Metrics
	tol := 0.2 // ms: HDR keeps 3 significant figures
	approx(t, "ttft p50", m[TTFT].P50, 100, tol)
	approx(t, "ttft p90", m[TTFT].P90, 200, tol)
	approx(t, "ttft mean", m[TTFT].Mean, 120, tol)
	approx(t, "ttft max", m[TTFT].Max, 200, tol)
	approx(t, "ttft intended p50", m[TTFTIntended].P50, 101, tol)
	approx(t, "itl p50", m[ITL].P50, 20, 0.05)
	if m[ITL].Count != 100 {
		t.Errorf("itl count %d, want 100 gaps", m[ITL].Count)
	}
	approx(t, "tpot p50", m[TPOT].P50, 20, 0.05)
	approx(t, "e2e p50", m[E2E].P50, 300, tol)
	approx(t, "e2e intended p50", m[E2EIntended].P50, 301, tol)
	approx(t, "tokens per chunk", m[TokensPerChunk].Mean, 1, 0.001)
	if sc.Requests.Total != 11 || sc.Requests.Succeeded != 10 || sc.Requests.Failed != 1 || sc.Requests.Errors["http_503"] != 1 {
		t.Errorf("requests %+v", sc.Requests)
	}
	if !strings.Contains(sc.Requests.ErrorSamples["http_503"], "overloaded") {
		t.Errorf("error sample %q", sc.Requests.ErrorSamples)
	}
	// Goodput: 8 of the 11 finished requests met ttft ≤ 150 ms.
	approx(t, "goodput", sc.Goodput.Fraction, 8.0/11, 1e-9)
	// Window: first send (1 ms) to last end (900+1+200+200 = 1301 ms).
	window := 1.300
	approx(t, "rps", sc.Throughput.RequestsPerS, 10/window, 1e-6)
	approx(t, "output tps", sc.Throughput.OutputTokensPerS, 110/window, 1e-6)
	approx(t, "input tps", sc.Throughput.InputTokensPerS, 1000/window, 1e-6)
	approx(t, "goodput rps", sc.Goodput.RequestsPerS, 8/window, 1e-6)
	if sc.Tokens.OutputSource != "usage" || sc.Tokens.Output != 110 {
		t.Errorf("tokens %+v", sc.Tokens)
	}
	if !sc.Load.Valid {
		t.Errorf("1 ms lag marked invalid: %s", sc.Load.InvalidReason)
	}
	approx(t, "achieved rate", sc.Load.AchievedRate, 10, 0.6)
	// Histograms round-trip exactly and merge.
	h, err := Decode(hist[TTFT])
	if err != nil {
		t.Fatal(err)
	}
	if h.TotalCount() != 10 || Summarize(h, 1000) != m[TTFT] {
		t.Errorf("decoded histogram differs: %+v vs %+v", Summarize(h, 1000), m[TTFT])
	}
	merged := hdr.New(1, latencyMax, sigFigs)
	merged.Merge(h)
	merged.Merge(h)
	if merged.TotalCount() != 20 || merged.ValueAtQuantile(50) != h.ValueAtQuantile(50) {
		t.Error("merging two copies changed the median")
	}
	// Lookup serves thresholds from the histograms.
	if v, ok := Lookup(&sc, hist, "percentile", 99, "ttft"); !ok || math.Abs(v-200) > tol {
		t.Errorf("Lookup p99(ttft) = %v %v", v, ok)
	}
	if v, ok := Lookup(&sc, hist, "", 0, "error_rate"); !ok || math.Abs(v-1.0/11) > 1e-9 {
		t.Errorf("Lookup error_rate = %v %v", v, ok)
	}
	if _, ok := Lookup(&sc, hist, "", 0, "nonsense"); ok {
		t.Error("Lookup of an unknown scalar succeeded")
	}
}

func TestValidityCauses(t *testing.T) {
	tests := []struct {
		name  string
		cap   int
		build func(i int) *record.Record
		cause string
	}{
		{"on time", 0, func(i int) *record.Record {
			return mk(uint64(i), time.Duration(i)*10*time.Millisecond, time.Millisecond, 5*time.Millisecond, time.Millisecond, 2)
		}, ""},
		{"generator", 0, func(i int) *record.Record {
			return mk(uint64(i), time.Duration(i)*10*time.Millisecond, time.Duration(i)*2*time.Millisecond, 5*time.Millisecond, time.Millisecond, 2)
		}, "generator_saturated"},
		{"cap", 4, func(i int) *record.Record {
			r := mk(uint64(i), time.Duration(i)*10*time.Millisecond, time.Duration(i)*2*time.Millisecond, 5*time.Millisecond, time.Millisecond, 2)
			r.SlotWait = time.Duration(i) * 2 * time.Millisecond
			return r
		}, "concurrency_cap"},
		{"backpressure", 0, func(i int) *record.Record {
			r := mk(uint64(i), time.Duration(i)*10*time.Millisecond, time.Millisecond, 50*time.Millisecond, time.Millisecond, 2)
			r.Written = r.Sent.Add(40 * time.Millisecond)
			return r
		}, "server_backpressure"},
		{"out of file descriptors", 0, func(i int) *record.Record {
			r := mk(uint64(i), time.Duration(i)*10*time.Millisecond, time.Millisecond, 5*time.Millisecond, time.Millisecond, 2)
			if i%10 == 0 { // on time otherwise
				r.Fail(record.LocalFileLimit, "socket: too many open files", r.Sent)
			}
			return r
		}, "generator_file_limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := New(Config{Start: t0, Mode: "open", TargetRate: 100, MaxConcurrency: tc.cap})
			for i := 0; i < 100; i++ {
				feed(rc, tc.build(i))
			}
			sc, _, _ := rc.Scenario("s", t0.Add(3*time.Second))
			if got := sc.Load.InvalidCause; got != tc.cause || sc.Load.Valid != (tc.cause == "") {
				t.Fatalf("cause %q valid %v (%s), want %q", got, sc.Load.Valid, sc.Load.InvalidReason, tc.cause)
			}
		})
	}
}

func TestWarmupAndCancelledExcluded(t *testing.T) {
	rc := New(Config{Start: t0, Mode: "closed", Concurrency: 1})
	w := mk(0, 0, 0, 500*time.Millisecond, time.Millisecond, 2)
	w.Warmup = true
	c := mk(1, time.Second, 0, 0, 0, 1)
	c.Fail(record.Cancelled, "stop", c.Sent)
	feed(rc, w, c, mk(2, 2*time.Second, 0, 10*time.Millisecond, time.Millisecond, 2))
	sc, _, _ := rc.Scenario("s", t0.Add(3*time.Second))
	if sc.Requests.Warmup != 1 || sc.Requests.Cancelled != 1 || sc.Requests.Succeeded != 1 || sc.Requests.Failed != 0 {
		t.Fatalf("requests %+v", sc.Requests)
	}
	if sc.Metrics[TTFT].Max > 11 {
		t.Fatalf("warm-up leaked into TTFT: max %v", sc.Metrics[TTFT].Max)
	}
	if sc.Series.SentPerS[0] != 1 || sc.Series.SentPerS[2] != 1 {
		t.Fatalf("series sent %v: warm-up belongs in the series", sc.Series.SentPerS)
	}
}

func TestSeries(t *testing.T) {
	rc := New(Config{Start: t0, Mode: "open"})
	for i := 0; i < 30; i++ {
		ttft := 10 * time.Millisecond
		if i >= 20 {
			ttft = 40 * time.Millisecond
		}
		feed(rc, mk(uint64(i), time.Duration(i)*100*time.Millisecond, 0, ttft, time.Millisecond, 3))
	}
	sc, _, _ := rc.Scenario("s", t0.Add(4*time.Second))
	s := sc.Series
	if len(s.SentPerS) != 3 || s.SentPerS[0] != 10 || s.CompletedPerS[1] != 10 {
		t.Fatalf("sent %v completed %v", s.SentPerS, s.CompletedPerS)
	}
	approx(t, "second 0 TTFT p50", s.TTFTp50ms[0], 10, 0.05)
	approx(t, "second 2 TTFT p99", s.TTFTp99ms[2], 40, 0.5) // two significant figures per second
	if s.OutputTokens[1] != 30 {
		t.Fatalf("output tokens %v", s.OutputTokens)
	}
}

func TestParseSLO(t *testing.T) {
	s, err := ParseSLO("ttft=500ms, tpot=50ms,e2e=2s,itl=100ms")
	if err != nil || s.TTFT != 500*time.Millisecond || s.TPOT != 50*time.Millisecond || s.E2E != 2*time.Second || s.ITL != 100*time.Millisecond {
		t.Fatalf("%+v %v", s, err)
	}
	for _, bad := range []string{"ttft", "ttft=fast", "ttfb=1s", "ttft=-1s"} {
		if _, err := ParseSLO(bad); err == nil {
			t.Errorf("ParseSLO(%q) accepted", bad)
		}
	}
}

func BenchmarkRecord(b *testing.B) {
	rc := New(Config{Start: t0, Mode: "open", SLO: SLO{TTFT: time.Second}})
	r := mk(0, 0, time.Millisecond, 100*time.Millisecond, 20*time.Millisecond, 128)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		rc.Sent(r.Sent, r.Intended, false)
		rc.Record(r)
	}
}

// TestRecordDoesNotAllocate: memory must not grow with the number of
// requests (only --records keeps each one).
func TestRecordDoesNotAllocate(t *testing.T) {
	rc := New(Config{Start: t0, Mode: "open", SLO: SLO{TTFT: time.Second}})
	r := mk(0, 0, time.Millisecond, 100*time.Millisecond, 20*time.Millisecond, 64)
	bad := mk(1, 0, time.Millisecond, 0, 0, 1)
	bad.Fail(record.Timeout, "t", bad.End)
	feed(rc, r, bad) // first use of each map key
	if n := testing.AllocsPerRun(1000, func() { feed(rc, r, bad) }); n != 0 {
		t.Fatalf("%v allocations per recorded request", n)
	}
}

func TestDiscrepancyAndProgress(t *testing.T) {
	rc := New(Config{Start: t0, Mode: "closed", Concurrency: 1})
	a := mk(0, 0, 0, 10*time.Millisecond, time.Millisecond, 5) // usage 5
	a.TokenizerTokens = 2
	b := mk(1, time.Second, 0, 30*time.Millisecond, time.Millisecond, 5) // usage 5, not counted locally
	rc.Sent(a.Sent, a.Intended, false)
	if p := rc.Progress(); p.Sent != 1 || p.InFlight != 1 || p.Completed != 0 {
		t.Fatalf("progress after one send: %+v", p)
	}
	rc.Record(a)
	feed(rc, b)
	p := rc.Progress()
	if p.Sent != 2 || p.Completed != 2 || p.InFlight != 0 || p.OutputTokens != 10 || p.TTFTp50ms < 9.9 || p.TTFTp50ms > 10.1 {
		t.Fatalf("progress %+v, want 2 sent and done, 10 tokens, second 0's TTFT p50 10 ms", p)
	}
	sc, _, _ := rc.Scenario("s", t0.Add(2*time.Second))
	// |5 − 2| / 5 over the one request counted both ways.
	if d := sc.Tokens.Discrepancy; d == nil || math.Abs(*d-0.6) > 1e-9 || sc.Tokens.DiscrepancySampled != 1 {
		t.Fatalf("discrepancy %v over %d", sc.Tokens.Discrepancy, sc.Tokens.DiscrepancySampled)
	}
}

// TestReadLagKeepsStageValid: late reads do not change the load the
// server saw, so they never make a stage invalid; what they may have moved
// is the stage's measurement error, with the late shares beside it.
func TestReadLagKeepsStageValid(t *testing.T) {
	tests := []struct {
		name      string
		lag       time.Duration
		lateFirst int // every lateFirst-th request's first token is late (0: none)
		lateGaps  int // late gaps in every request
		// A late first token stamped this much after the others' 10 ms
		// TTFT, and its read's bound.
		firstAfter, firstBound time.Duration
		// The TTFT p99 range the stage must report (zero: none).
		wantP99 result.Range
		wantITL bool // an ITL error
	}{
		{"not measured", 0, 0, 0, 0, 0, result.Range{}, false},
		{"small", 200 * time.Microsecond, 0, 0, 0, 0, result.Range{}, false},
		// 16 % of first tokens late by up to 2 ms, all of them stamped at
		// the others' 10 ms: the true p99 (the 50th of 50) is still one of
		// the 84 % on time, an exact 10 ms.
		{"late first tokens", 200 * time.Microsecond, 7, 0, 0, 2 * time.Millisecond, result.Range{Low: 10, High: 10}, false},
		// One request of 50 stamped 20 ms after the others with a bound of
		// 25 ms: it is the stage's p99 (the 50th of 50), whose true value
		// lies between the others' 10 ms and its 30 ms.
		{"one late first token is the p99", 200 * time.Microsecond, 50, 0, 20 * time.Millisecond, 25 * time.Millisecond, result.Range{Low: 10, High: 30}, false},
		{"late gaps", 20 * time.Millisecond, 0, 1, 0, 0, result.Range{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			r := New(Config{Start: start, Mode: "open", TargetRate: 10})
			for i := range 50 {
				sent := start.Add(time.Duration(i) * 100 * time.Millisecond)
				r.Sent(sent, sent, false)
				rec := &record.Record{}
				rec.Reset()
				rec.Sent, rec.Intended = sent, sent
				rec.FirstToken, rec.End = sent.Add(10*time.Millisecond), sent.Add(20*time.Millisecond)
				rec.OutputTokens, rec.Chunks, rec.ReadLag = 1, 10, tt.lag
				rec.Gaps = make([]time.Duration, 9)
				for g := range rec.Gaps {
					rec.Gaps[g] = time.Millisecond
				}
				if tt.lag > time.Millisecond {
					rec.LateEvents = 1
				}
				rec.LateFirst = tt.lateFirst > 0 && i%tt.lateFirst == 0
				if rec.LateFirst {
					rec.FirstToken = rec.FirstToken.Add(tt.firstAfter)
					rec.FirstBound = tt.firstBound
				}
				rec.LateGaps = tt.lateGaps
				r.Record(rec)
			}
			sc, _, err := r.Scenario("s", start.Add(6*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			l := sc.Load
			if !l.Valid || l.InvalidCause != "" {
				t.Fatalf("valid %v cause %q (%s): late reads never make a stage invalid", l.Valid, l.InvalidCause, l.InvalidReason)
			}
			if tt.lag > 0 && (l.LateFirstTokens == nil || l.LateGaps == nil) {
				t.Fatalf("late_first_tokens %v, late_gaps %v: want both measured", l.LateFirstTokens, l.LateGaps)
			}
			if (l.ReadLagMS != nil) != (tt.lag > 0) {
				t.Fatalf("read_lag_ms %+v with lag %v", l.ReadLagMS, tt.lag)
			}
			me := sc.MeasurementError
			var got result.Range
			if me != nil {
				got = me.Figures[TTFT].P99
			}
			if math.Abs(got.Low-tt.wantP99.Low) > 0.05 || math.Abs(got.High-tt.wantP99.High) > 0.05 {
				t.Fatalf("TTFT p99 range %+v, want %+v (error %+v)", got, tt.wantP99, me)
			}
			hasITL := false
			if me != nil {
				_, hasITL = me.Figures[ITL]
			}
			if hasITL != tt.wantITL {
				t.Fatalf("error %+v: want an ITL error %v", me, tt.wantITL)
			}
		})
	}
}
