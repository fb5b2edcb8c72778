package report

import (
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"strings"
	"testing"

	"github.com/spate-dev/spate/internal/verdict/threshold"
	"github.com/spate-dev/spate/result"
)

func dist(n int64, base float64) result.Dist {
	return result.Dist{Count: n, Mean: base * 1.1, Stddev: base / 10, Min: base * 0.8, P50: base, P90: base * 1.2, P95: base * 1.3, P99: base * 1.5, P999: base * 1.9, Max: base * 2}
}

func sample() *result.Result {
	return &result.Result{
		Schema: result.Schema, Fingerprint: "0123456789abcdef",
		Provenance: result.Provenance{Model: "llama"},
		Scenarios: []result.Scenario{
			{
				Name: "baseline", DurationS: 60.2,
				Load: result.Load{Mode: "open", Arrival: "poisson", TargetRate: 20, AchievedRate: 19.9, Valid: true,
					LagBoundMS: 34.7, ScheduleLagMS: dist(1200, 0.4), Validity: &result.Validity{BoundMS: 34.7, FloorMS: 10, MedianGapMS: 34.7,
						LatencyP50MS: 81, Sends: 1200, LateSends: 2, LagP99MS: 0.6, RateRatio: 0.998},
					HTTPPhases: &result.HTTPPhases{DNSMS: new(dist(16, 0.31)), ConnectMS: new(dist(16, 0.12)), TLSMS: new(dist(16, 30.2)),
						WriteMS: new(dist(1200, 0.02)), FirstByteMS: new(dist(1200, 40.1))}},
				Requests:   result.Requests{Total: 1200, Succeeded: 1195, Failed: 5, Errors: map[string]int{"http_500": 3, "timeout": 2}},
				Throughput: result.Throughput{RequestsPerS: 19.8, InputTokensPerS: 10137, OutputTokensPerS: 2534, TotalTokensPerS: 12671, STPS: 18.9},
				Tokens:     result.Tokens{OutputSource: "usage", Tokenizer: "cl100k_base", Discrepancy: new(0.5), DiscrepancySampled: 75},
				Metrics: map[string]result.Dist{
					"ttft_ms": dist(1195, 81), "ttft_intended_ms": dist(1195, 81.5), "itl_ms": dist(151000, 12),
					"tpot_ms": dist(1195, 12), "e2e_ms": dist(1195, 1605), "e2e_intended_ms": dist(1195, 1606),
					"first_answer_ms": dist(1195, 81), "tokens_per_chunk": {Count: 151000, Mean: 1, P50: 1, Max: 1},
				},
				Goodput: result.Goodput{Fraction: 0.99, RequestsPerS: 19.6, IntendedFraction: 0.95, IntendedRequestsPerS: 18.8,
					SLOms: map[string]float64{"ttft": 500, "tpot": 50}},
				Thresholds: []threshold.Outcome{{Expr: "p99(ttft) < 800ms", Value: 122.2, Pass: true, From: "intended"}},
				Server: &result.Server{Figures: map[string]float64{"kv_cache_usage_peak": 0.59, "kv_cache_full_s": 0, "requests_waiting_mean": 38.5,
					"requests_waiting_peak": 85, "requests_running_peak": 64, "queue_ttft_p99_pearson": 0.99, "queue_ttft_p99_n_eff": 2.8,
					"gpu_energy_j": 24120, "gpu_power_mean_w": 402, "gpu_energy_j_per_output_token": 0.158, "gpu_energy_j_per_request": 20.1},
					EnergySource: "measured",
					Warnings:     []string{"http://127.0.0.1:1/metrics: connection refused"}},
				Checks: &result.Checks{CheckFigures: result.CheckFigures{Checked: 1195, Passed: 1100, PassRate: 1100.0 / 1195, STPSChecked: 18.2}},
				Output: &result.Output{FinishReasons: map[string]int{"length": 1195}, FinishLength: 1195, Truncated: 120, TruncationRate: ptr(120.0 / 1195),
					TokenDropRate: ptr(0.051), ExactRequests: 1195, DroppedTokens: 7800, Warnings: []string{"3 answers asked for exactly max_tokens ended with stop"}},
				ICE: &result.ICE{ICEFigures: result.ICEFigures{Conversations: 400, Mean: 0.12, P50: 0.11, P90: 0.19, Max: 0.31}, Turns: 1195, MeanEntropy: 1.04},
				Breakdown: map[string]map[string]result.Group{"cluster": { // the same split as intent: not shown twice
					"comparison":  {Requests: result.Requests{Total: 480, Succeeded: 478, Failed: 2}},
					"fact_lookup": {Requests: result.Requests{Total: 720, Succeeded: 717, Failed: 3}},
				}, "intent": {
					"fact_lookup": {Requests: result.Requests{Total: 720, Succeeded: 717, Failed: 3}, Goodput: result.Goodput{Fraction: 0.995},
						Metrics: map[string]result.Dist{"ttft_ms": dist(717, 70), "e2e_ms": dist(717, 1400)}, Checks: &result.CheckFigures{PassRate: 0.97}},
					"comparison": {Requests: result.Requests{Total: 480, Succeeded: 478, Failed: 2}, Goodput: result.Goodput{Fraction: 0.98},
						Metrics: map[string]result.Dist{"ttft_ms": dist(478, 95), "e2e_ms": dist(478, 1900)}},
				}},
			},
			{
				Name: "peak", DurationS: 30,
				Load: result.Load{Mode: "open", Arrival: "constant", TargetRate: 80, AchievedRate: 61, MaxConcurrency: 32,
					LagBoundMS: 10, InvalidCause: "concurrency_cap", InvalidReason: "requests waited for slots",
					ScheduleLagMS: dist(1800, 250), Missed: 412},
				Requests:   result.Requests{Total: 1800, Succeeded: 1800, Cancelled: 3, Warmup: 40, Errors: map[string]int{}},
				Metrics:    map[string]result.Dist{"ttft_ms": dist(1800, 300), "first_reasoning_ms": dist(1800, 200), "first_answer_ms": dist(1800, 900)},
				Thresholds: []threshold.Outcome{{Expr: "p99(ttft) < 400ms", Value: 450, Pass: false}, {Expr: "stps >= 1", Err: "stps was not measured in this run"}},
				Warnings:   []string{"something to know"},
				Resilience: &result.Resilience{SlopeWindowS: 10, SlopeWindows: 21, E2Ep99SlopeMSPerS: new(0.82), TTFTp99SlopeMSPerS: new(-0.1),
					ErrorRateSlopePPPerMin: new(1.35), SLOMetric: "e2e", SLOms: 600, SLOSource: "baseline", RecoveryWindowS: 5,
					Recoveries: []result.Recovery{{Event: "load_step", Recovered: true}, {Event: "fault_end", AtS: 25, Recovered: true, RecoveryS: 3},
						{Event: "fault_end", AtS: 50, RecoveryS: 10}}},
			},
		},
	}
}

func ptr(v float64) *float64 { return &v }

// sampleMore is sample with a ramp, a trace replay and a closed loop.
func sampleMore() *result.Result {
	r := sample()
	r.Scenarios = append(r.Scenarios,
		result.Scenario{
			Name: "ramp", DurationS: 10,
			Load: result.Load{Mode: "open", Arrival: "constant", RampFrom: 10, TargetRate: 30, AchievedRate: 19.5, Valid: true,
				LagBoundMS: 33, Validity: &result.Validity{BoundMS: 33, Sends: 195, LagP99MS: 1.2, RateRatio: 1}},
			Requests: result.Requests{Total: 195, Succeeded: 195},
		},
		result.Scenario{
			Name: "replay", DurationS: 12,
			Load: result.Load{Mode: "open", Arrival: "trace", ScheduledRate: 8.25, AchievedRate: 8.2, Shaped: false, Valid: true,
				LagBoundMS: 80, Validity: &result.Validity{BoundMS: 80, Sends: 99, LagP99MS: 0.9, RateRatio: 0.99}},
			Requests: result.Requests{Total: 99, Succeeded: 99},
		},
		result.Scenario{
			Name: "closed", DurationS: 5,
			Load: result.Load{Mode: "closed", Concurrency: 8, AchievedRate: 40, Valid: true,
				LagBoundMS: 10, Validity: &result.Validity{BoundMS: 10, Sends: 192, LagP99MS: 0.1}},
			Requests: result.Requests{Total: 200, Succeeded: 200},
		})
	return r
}

// TestConsoleHTTP: a plain HTTP run has no model and no tokens to show,
// shaping is named in the header, and an accepted invalid measurement
// says so on the last line.
func TestConsoleHTTP(t *testing.T) {
	r := &result.Result{
		Schema: result.Schema, Fingerprint: "0123456789abcdef", Provenance: result.Provenance{API: "http"},
		Config: result.Config{AllowInvalid: true},
		Scenarios: []result.Scenario{{
			Name: "main", DurationS: 2,
			Load: result.Load{Mode: "open", Arrival: "poisson", TargetRate: 50000, AchievedRate: 9000, Shaped: true, Missed: 80000,
				InvalidCause: "missed_sends", InvalidReason: "the load generator could not send every scheduled request by the stage's deadline: 80000 scheduled requests were not sent"},
			Requests:   result.Requests{Total: 18000, Succeeded: 18000},
			Throughput: result.Throughput{RequestsPerS: 9000},
			Tokens:     result.Tokens{OutputSource: "none"},
		}},
		ThresholdsPassed: true,
	}
	var b bytes.Buffer
	if err := Console(&b, r); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "console-http.golden", b.Bytes())
}

func TestConsoleGolden(t *testing.T) {
	var b bytes.Buffer
	if err := Console(&b, sampleMore()); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "console.golden", b.Bytes())
}

// seriesStage is a stage of a ramp: sent a second for 6 s, the server
// completing done a second from its first (E2E 100 ms), in flight
// growing by grow a second, and goodput good.
func seriesStage(name string, sent, done, grow int, good float64) result.Scenario {
	sc := result.Scenario{Name: name, DurationS: 6,
		Load:       result.Load{Mode: "open", Arrival: "poisson", TargetRate: float64(sent), AchievedRate: float64(sent), Valid: true},
		Requests:   result.Requests{Total: 6 * sent, Succeeded: 6 * done},
		Throughput: result.Throughput{RequestsPerS: float64(done), OutputTokensPerS: float64(64 * done)},
		Metrics:    map[string]result.Dist{"ttft_ms": {P50: 80, P99: 120}, "tpot_ms": {P50: 12}},
	}
	sc.Goodput.Fraction = good
	for i := range 7 {
		s, d := sent, done
		if i == 6 {
			s, d = 0, 0 // the drain
		}
		sc.Series.SentPerS = append(sc.Series.SentPerS, s)
		sc.Series.CompletedPerS = append(sc.Series.CompletedPerS, d)
		sc.Series.ErrorsPerS = append(sc.Series.ErrorsPerS, 0)
		sc.Series.InFlight = append(sc.Series.InFlight, 2+grow*i)
		sc.Series.E2Ep50ms = append(sc.Series.E2Ep50ms, 100)
		sc.Series.TTFTp50ms = append(sc.Series.TTFTp50ms, 80)
	}
	return sc
}

// TestSweepGolden: the knee is the most load the server sustained
// (capacity's rule): rate-40 met the SLO for 95 % of what it answered
// but completed 25 of the 40 requests a second it was sent, so it is not
// the knee, and the table shows the completed/sent that says so (the knee
// was rate-40 before: goodput alone). An invalid stage is named too.
func TestSweepGolden(t *testing.T) {
	r := sample()
	r.Scenarios = []result.Scenario{
		seriesStage("rate-10", 10, 10, 0, 1),
		seriesStage("rate-20", 20, 20, 0, 0.97),
		seriesStage("rate-40", 40, 25, 15, 0.95),
		seriesStage("rate-60", 60, 25, 30, 0.4),
	}
	r.Scenarios[3].Load.Valid, r.Scenarios[3].Load.InvalidCause = false, "generator_saturated"
	var b bytes.Buffer
	if err := Sweep(&b, r, 0.9); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "sweep.golden", b.Bytes())
	if !strings.Contains(b.String(), "knee: rate-20,") {
		t.Errorf("knee is not rate-20:\n%s", b.String())
	}
}

// TestConsoleEscapesServerText: a model id and warnings with terminal
// escape codes (a server's text) are printed escaped: no server can forge
// a "thresholds: PASS" line or redraw the terminal (golden).
func TestConsoleEscapesServerText(t *testing.T) {
	r := sample()
	r.Scenarios = r.Scenarios[:1]
	r.Provenance.Model = "m\x1b[2K\r\x1b[32mthresholds: PASS\x1b[0m"
	r.Warnings = []string{"stage peak: setting faults at http://h/admin/faults: HTTP 400: \x1b]0;owned\x07bad\nline"}
	var b bytes.Buffer
	if err := Console(&b, r); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(b.Bytes(), "\x1b\x07\r") {
		t.Errorf("a control character reached the console:\n%q", b.String())
	}
	golden.Check(t, "console-escapes.golden", b.Bytes())
}

// TestThresholdsCannotJudge: a threshold whose figure was not measured is
// marked "?" and, with none failed, the verdict line says no verdict, in
// the console and in Markdown; a failed one beside it makes it FAIL.
func TestThresholdsCannotJudge(t *testing.T) {
	unjudged := result.ThresholdOutcome{Expr: "msr >= 0.9", Err: "msr was not measured in this run", Unjudged: true}
	failed := result.ThresholdOutcome{Expr: "p99(ttft) < 1s", Value: 1200}
	for _, tc := range []struct {
		name     string
		outs     []result.ThresholdOutcome
		console  string
		markdown string
	}{
		{"unjudged only", []result.ThresholdOutcome{unjudged}, "thresholds: CANNOT JUDGE (1 could not be judged: no trustworthy verdict)", "❔ CANNOT JUDGE (1 of 1 threshold could not be judged)"},
		{"unjudged and failed", []result.ThresholdOutcome{unjudged, failed}, "thresholds: FAIL", "❌ FAIL (1 of 2 thresholds failed)"},
	} {
		r := &result.Result{Schema: result.Schema, Scenarios: []result.Scenario{{Name: "main", Load: result.Load{Mode: "closed", Valid: true}, Thresholds: tc.outs}}}
		var c, m bytes.Buffer
		if err := Console(&c, r); err != nil {
			t.Fatal(err)
		}
		if err := Markdown(&m, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(c.String(), tc.console+"\n") || !strings.Contains(c.String(), "  ? msr >= 0.9 (msr was not measured in this run)") {
			t.Errorf("%s: console\n%s", tc.name, c.String())
		}
		if !strings.Contains(m.String(), tc.markdown) || !strings.Contains(m.String(), "❔ cannot judge") {
			t.Errorf("%s: markdown\n%s", tc.name, m.String())
		}
	}
}

// TestMeasurementErrorShown: a stage whose responses were read late shows
// its error line, a threshold judged at both ends shows its range, and the
// last line says the run was valid but by how much imprecise; Markdown
// shows the same.
func TestMeasurementErrorShown(t *testing.T) {
	lo, hi := 151.8, 164.6
	r := &result.Result{Schema: result.Schema, ThresholdsPassed: true, Scenarios: []result.Scenario{{
		Name: "main", Load: result.Load{Mode: "closed", Valid: true}, Requests: result.Requests{Total: 195, Succeeded: 195},
		Thresholds: []result.ThresholdOutcome{{Expr: "p99(ttft) < 800ms", Value: 164.6, Pass: true, Low: &lo, High: &hi}},
		MeasurementError: &result.MeasurementError{
			Figures: map[string]result.FigureError{"ttft_ms": {Late: 6, Count: 195, BoundMS: 29.6, HighOnly: true, P99: result.Range{Low: 151.8, High: 164.6}}},
			Goodput: result.Range{Low: 0.97, High: 1},
		},
		Intervals: &result.Intervals{Level: 0.95, Metrics: map[string]result.PercentileIntervals{"ttft_ms": {P50: &result.Range{Low: 80.1, High: 80.9}}}},
	}}}
	var c, m bytes.Buffer
	if err := Console(&c, r); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&m, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"error      responses read late (a busy machine), so the true TTFT p99 in [151.8, 164.6] ms (6 of 195 read late, by up to 29.6 ms), goodput in [97.0 %, 100.0 %]\n",
		"  ✓ p99(ttft) < 800ms (164.6; true value in [151.8, 164.6], the same verdict at both ends)\n",
		"measurement: valid, imprecise by up to 12.8 ms (TTFT p99 of stage main, responses read late; every verdict judged at both ends)\n",
		"interval   95 % (ms): TTFT p50 [80.1, 80.9] p99 — (too few requests)\n",
	} {
		if !strings.Contains(c.String(), want) {
			t.Errorf("console lacks %q:\n%s", want, c.String())
		}
	}
	for _, want := range []string{"164.6 (true value in [151.8, 164.6])", "stage main: measurement error: responses read late"} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, m.String())
		}
	}
}

// TestAllFailedSaysNothingMeasured: a stage in which no request succeeded
// is not "valid" and shows no answers line (a token drop of 100 % of
// answers that never came): it says nothing was measured.
func TestAllFailedSaysNothingMeasured(t *testing.T) {
	drop := 1.0
	r := &result.Result{Schema: result.Schema, Scenarios: []result.Scenario{{
		Name: "main", Load: result.Load{Mode: "open", Valid: true},
		Requests: result.Requests{Total: 10, Failed: 10, Errors: map[string]int{"connect_reset": 10}},
		Output:   &result.Output{DroppedTokens: 640, ExactRequests: 10, TokenDropRate: &drop},
	}}}
	var c bytes.Buffer
	if err := Console(&c, r); err != nil {
		t.Fatal(err)
	}
	out := c.String()
	if strings.Contains(out, "measurement: valid") || strings.Contains(out, "token drop") || !strings.Contains(out, "measurement: none: no request succeeded in stage main") {
		t.Errorf("console:\n%s", out)
	}
}
