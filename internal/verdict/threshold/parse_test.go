package threshold

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	tests := []struct {
		expr string
		want Threshold
	}{
		// The examples the command line documents.
		{"p99(ttft) < 800ms", Threshold{Agg: AggPercentile, Percentile: 99, Metric: "ttft", Op: "<", Value: 800}},
		{"p95(ttft) < 200ms", Threshold{Agg: AggPercentile, Percentile: 95, Metric: "ttft", Op: "<", Value: 200}},
		{"p99.9(e2e) <= 5s", Threshold{Agg: AggPercentile, Percentile: 99.9, Metric: "e2e", Op: "<=", Value: 5000}},
		{"mean(tpot) < 40ms", Threshold{Agg: AggMean, Metric: "tpot", Op: "<", Value: 40}},
		{"avg(itl) < 30ms", Threshold{Agg: AggMean, Metric: "itl", Op: "<", Value: 30}},
		{"max(ttft_intended) < 2s", Threshold{Agg: AggMax, Metric: "ttft_intended", Op: "<", Value: 2000}},
		{"p50(e2e_intended)<1.5s", Threshold{Agg: AggPercentile, Percentile: 50, Metric: "e2e_intended", Op: "<", Value: 1500}},
		{"error_rate < 0.1%", Threshold{Metric: "error_rate", Op: "<", Value: 0.001}},
		{"error_rate < 0.001", Threshold{Metric: "error_rate", Op: "<", Value: 0.001}},
		{"goodput >= 95%", Threshold{Metric: "goodput", Op: ">=", Value: 0.95}},
		{"rps >= 10", Threshold{Metric: "rps", Op: ">=", Value: 10}},
		{"stps >= 10", Threshold{Metric: "stps", Op: ">=", Value: 10}},
		{"output_tps > 500", Threshold{Metric: "output_tps", Op: ">", Value: 500}},
		{"count(ttft) >= 100", Threshold{Agg: AggCount, Metric: "ttft", Op: ">=", Value: 100}},
		{"p99(schedule_lag) < 10ms", Threshold{Agg: AggPercentile, Percentile: 99, Metric: "schedule_lag", Op: "<", Value: 10}},
		{"stddev(itl) < 5ms", Threshold{Agg: AggStddev, Metric: "itl", Op: "<", Value: 5}},

		// Spellings, case and whitespace.
		{"p999(e2e) < 5s", Threshold{Agg: AggPercentile, Percentile: 99.9, Metric: "e2e", Op: "<", Value: 5000}},
		{"p9999(e2e) < 5s", Threshold{Agg: AggPercentile, Percentile: 99.99, Metric: "e2e", Op: "<", Value: 5000}},
		{"p100(ttft) < 1s", Threshold{Agg: AggPercentile, Percentile: 100, Metric: "ttft", Op: "<", Value: 1000}},
		{"p0.5(ttft) > 1ms", Threshold{Agg: AggPercentile, Percentile: 0.5, Metric: "ttft", Op: ">", Value: 1}},
		{"p75(itl) == 3ms", Threshold{Agg: AggPercentile, Percentile: 75, Metric: "itl", Op: "==", Value: 3}},
		{"P99( TTFT )<800MS", Threshold{Agg: AggPercentile, Percentile: 99, Metric: "ttft", Op: "<", Value: 800}},
		{"  MIN ( itl ) != 0  ", Threshold{Agg: AggMin, Metric: "itl", Op: "!=", Value: 0}},
		{"\tp90(ttft)\t<\t800 ms\n", Threshold{Agg: AggPercentile, Percentile: 90, Metric: "ttft", Op: "<", Value: 800}},
		{"Error_Rate<=1", Threshold{Metric: "error_rate", Op: "<=", Value: 1}},
		{"goodput >= 100%", Threshold{Metric: "goodput", Op: ">=", Value: 1}},

		// Units: a plain number on a latency is milliseconds; conversions are exact.
		{"p99(ttft) < 800", Threshold{Agg: AggPercentile, Percentile: 99, Metric: "ttft", Op: "<", Value: 800}},
		{"p99(ttft) < 250us", Threshold{Agg: AggPercentile, Percentile: 99, Metric: "ttft", Op: "<", Value: 0.25}},
		{"p99(ttft) < 250µs", Threshold{Agg: AggPercentile, Percentile: 99, Metric: "ttft", Op: "<", Value: 0.25}},
		{"p99(ttft) < 250μs", Threshold{Agg: AggPercentile, Percentile: 99, Metric: "ttft", Op: "<", Value: 0.25}},
		{"p99(ttft) < 1.1s", Threshold{Agg: AggPercentile, Percentile: 99, Metric: "ttft", Op: "<", Value: 1100}},
		{"p99(ttft) < .5s", Threshold{Agg: AggPercentile, Percentile: 99, Metric: "ttft", Op: "<", Value: 500}},
		{"max(e2e) < 1.5m", Threshold{Agg: AggMax, Metric: "e2e", Op: "<", Value: 90000}},
		{"mean(tokens_per_chunk) >= 1.5", Threshold{Agg: AggMean, Metric: "tokens_per_chunk", Op: ">=", Value: 1.5}},
		{"count(tokens_per_chunk) > 0", Threshold{Agg: AggCount, Metric: "tokens_per_chunk", Op: ">", Value: 0}},
		{"goodput_rps >= 2.5", Threshold{Metric: "goodput_rps", Op: ">=", Value: 2.5}},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := Parse(tc.expr)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.expr, err)
			}
			tc.want.Expr = strings.TrimSpace(tc.expr)
			if got != tc.want {
				t.Errorf("Parse(%q) =\n  %+v\nwant\n  %+v", tc.expr, got, tc.want)
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		expr string
		want []string // substrings the error must contain
	}{
		{"", []string{"empty expression"}},
		{"   ", []string{"empty expression"}},

		// Units.
		{"p99(ttft) < 800mss", []string{`threshold "p99(ttft) < 800mss": unknown unit "mss" (use us, ms, s, m or %)`}},
		{"p99(ttft) < 2h", []string{`unknown unit "h"`}},
		{"p99(ttft) < 5%", []string{"% does not apply to p99(ttft)", "latency", "ms"}},
		{"rps >= 10s", []string{`unit "s" does not apply to rps`, "rate", "rps >= 10"}},
		{"rps >= 10%", []string{`unit "%" does not apply to rps`}},
		{"error_rate < 5ms", []string{`unit "ms" does not apply to error_rate`, "fraction", "1%"}},
		{"count(ttft) >= 100ms", []string{`unit "ms" does not apply to count(ttft)`, "plain number", "count(ttft) >= 100"}},
		{"max(tokens_per_chunk) > 2s", []string{`unit "s" does not apply to max(tokens_per_chunk)`}},
		{"goodput >= 95", []string{"goodput", "fraction between 0 and 1", "95%"}},
		{"error_rate < 5", []string{"error_rate", "5%"}},
		{"goodput >= 150%", []string{"cannot exceed 100%", "150%"}},

		// Metrics.
		{"p99(foo) < 1s", []string{`unknown metric "foo"`, "ttft", "tokens_per_chunk", "error_rate", "stps"}},
		{"p99(ttf) < 1s", []string{`unknown metric "ttf"`, "did you mean ttft?"}},
		{"p99(ttft_ms) < 1s", []string{`unknown metric "ttft_ms"`, "did you mean ttft?"}},
		{"error_rat < 1%", []string{`unknown metric "error_rat"`, "did you mean error_rate?"}},
		{"ttft < 500ms", []string{`"ttft" is a distribution: write p99(ttft) < 500ms`}},
		{"tokens_per_chunk > 1", []string{`"tokens_per_chunk" is a distribution`}},
		{"p99(rps) > 10", []string{`"rps" is a scalar`, "write rps > 10"}},
		{"mean(goodput) >= 95%", []string{`"goodput" is a scalar`, "write goodput >= 95%"}},
		{"p99(9ttft) < 1s", []string{`invalid metric name "9ttft"`}},
		{"p99(tt.ft) < 1s", []string{`invalid metric name "tt.ft"`}},
		{"p99() < 1s", []string{"expected a metric name", "column 4"}},
		{"800ms > p99(ttft)", []string{"metric goes on the left", `"800ms > p99(ttft)"`}},
		{"(ttft) < 1s", []string{"expected a metric", "column 1"}},

		// Aggregates.
		{"p0(ttft) < 1s", []string{`percentile "p0"`, "out of range", "(0, 100]"}},
		{"p101(ttft) < 1s", []string{`percentile "p101"`, "out of range"}},
		{"p99.(ttft) < 1s", []string{`percentile "p99."`, "malformed"}},
		{"p99.9.9(ttft) < 1s", []string{`percentile "p99.9.9"`, "malformed"}},
		{"p9x(ttft) < 1s", []string{`percentile "p9x"`, "malformed"}},
		{"median(ttft) < 1s", []string{`unknown aggregate "median"`, "did you mean p50?"}},
		{"foo(ttft) < 1s", []string{`unknown aggregate "foo"`, "p99", "mean", "count", "column 1"}},
		{"p(ttft) < 1s", []string{`unknown aggregate "p"`}},

		// Structure.
		{"p99(ttft < 800ms", []string{`expected ")" after "p99(ttft"`, "column 10", `"< 800ms"`}},
		{"p99(ttft) 800ms", []string{"expected a comparison", "column 11", `"800ms"`}},
		{"p99(ttft)", []string{"missing comparison after \"p99(ttft)\""}},
		{"p99(ttft) = 800ms", []string{`unknown operator "="`, "write =="}},
		{"p99(ttft) => 800ms", []string{`unknown operator "=>"`, "write >="}},
		{"p99(ttft) =< 800ms", []string{`unknown operator "=<"`, "write <="}},
		{"p99(ttft) <> 800ms", []string{`unknown operator "<>"`, "write !="}},
		{"p99(ttft) << 800ms", []string{`unknown operator "<<"`, "column 11"}},
		{"p99(ttft) <", []string{`missing value after "<"`}},
		{"p99(ttft) < ms", []string{"expected a non-negative number", `"ms"`}},
		{"p99(ttft) < -5ms", []string{"expected a non-negative number", `"-5ms"`}},
		{"p99(ttft) < 1.2.3ms", []string{`malformed number "1.2.3"`}},
		{"p99(ttft) < .ms", []string{`malformed number "."`}},
		{"p99(ttft) < 800ms and rps > 1", []string{`unexpected "and rps > 1"`, "column 19", "repeat --threshold"}},
		{"rps >= 10 10", []string{`unexpected "10"`}},
		{"rps >= 1" + strings.Repeat("0", 400), []string{"too large"}},
		{"p99(ttft) < 1e3ms", []string{`exponent in "1e3ms"`, "column 13"}},
		{"p99(ttft) < 800ms)", []string{`unknown unit "ms)"`}},
		{"p99(ttft) < 800)", []string{`unexpected ")"`, "column 16"}},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := Parse(tc.expr)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want an error", tc.expr, got)
			}
			msg := err.Error()
			if prefix := fmt.Sprintf("threshold %q: ", tc.expr); !strings.HasPrefix(msg, prefix) {
				t.Errorf("error %q does not start with %q", msg, prefix)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("Parse(%q) error\n  %s\ndoes not contain\n  %s", tc.expr, msg, w)
				}
			}
			if got != (Threshold{}) {
				t.Errorf("Parse(%q) returned %+v with its error, want the zero Threshold", tc.expr, got)
			}
		})
	}
}

func TestString(t *testing.T) {
	tests := []struct{ expr, want string }{
		{"p99(ttft) < 800ms", "p99(ttft) < 800ms"},
		{"P999( E2E )<=5S", "p99.9(e2e) <= 5000ms"},
		{"p99.9(e2e) <= 5s", "p99.9(e2e) <= 5000ms"},
		{"avg(itl)<30ms", "mean(itl) < 30ms"},
		{"p99(ttft) < 250us", "p99(ttft) < 0.25ms"},
		{"p99(ttft) < 800", "p99(ttft) < 800ms"},
		{"count(ttft)>=100", "count(ttft) >= 100"},
		{"goodput >= 95%", "goodput >= 0.95"},
		{"error_rate < 0.1%", "error_rate < 0.001"},
		{"rps>=10", "rps >= 10"},
		{"mean(tokens_per_chunk) != 1.5", "mean(tokens_per_chunk) != 1.5"},
	}
	for _, tc := range tests {
		th, err := Parse(tc.expr)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.expr, err)
		}
		if got := th.String(); got != tc.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// TestKnownMetricsParse checks that every listed metric is accepted in the
// form it needs, and rejected in the other.
func TestKnownMetricsParse(t *testing.T) {
	for _, m := range KnownDistributions() {
		if _, err := Parse("p99(" + m + ") >= 0"); err != nil {
			t.Errorf("distribution %s: %v", m, err)
		}
		if _, err := Parse(m + " >= 0"); err == nil {
			t.Errorf("distribution %s accepted without an aggregate", m)
		}
	}
	for _, m := range KnownScalars() {
		if _, err := Parse(m + " >= 0"); err != nil {
			t.Errorf("scalar %s: %v", m, err)
		}
		if _, err := Parse("max(" + m + ") >= 0"); err == nil {
			t.Errorf("scalar %s accepted with an aggregate", m)
		}
	}
	if n := len(KnownDistributions()) + len(KnownScalars()); n != 41 {
		t.Errorf("%d known metrics, want 41", n)
	}
}

// TestResilienceScalars: the resilience gates parse in their units.
func TestResilienceScalars(t *testing.T) {
	for expr, want := range map[string]float64{
		"msr >= 0.7": 0.7, "msr >= 70%": 0.7, "resilience_slope < 0.82": 0.82,
		"error_rate_slope < 1.35": 1.35, "recovery_time < 10s": 10000, "recovery_time <= 500ms": 500,
	} {
		th, err := Parse(expr)
		if err != nil || th.Value != want {
			t.Errorf("%s: %+v %v, want limit %v", expr, th, err, want)
		}
	}
	for _, bad := range []string{"msr < 2", "recovery_time < 5%", "p99(msr) < 1"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestKnownListsAreCopies(t *testing.T) {
	d := KnownDistributions()
	d[0] = "changed"
	if KnownDistributions()[0] != "ttft" {
		t.Error("KnownDistributions exposes its backing array")
	}
	s := KnownScalars()
	s[0] = "changed"
	if !slices.Contains(KnownScalars(), "error_rate") {
		t.Error("KnownScalars exposes its backing array")
	}
}

// TestStringRoundTrip checks that unit conversions leave values that String
// writes and Parse reads back exactly.
func TestStringRoundTrip(t *testing.T) {
	for _, num := range []string{"0", "0.1", "1.1", "3.3333", "123456.789", "0.000001", "99999999999999999999"} {
		for _, unit := range []string{"", "us", "µs", "ms", "s", "m"} {
			expr := "p99.99(e2e) <= " + num + unit
			th, err := Parse(expr)
			if err != nil {
				t.Fatalf("Parse(%q): %v", expr, err)
			}
			again, err := Parse(th.String())
			if err != nil {
				t.Fatalf("Parse(%q): %v", th.String(), err)
			}
			th.Expr, again.Expr = "", ""
			if again != th {
				t.Errorf("%q: String() %q re-parses to %+v, want %+v", expr, th.String(), again, th)
			}
		}
	}
}

func TestStageSelector(t *testing.T) {
	tests := []struct {
		in, stage, canon, err string
	}{
		{"p99(e2e){stage:peak} < 5s", "peak", "p99(e2e){stage:peak} < 5000ms", ""},
		{"p99(e2e) { stage : base-1.a } < 5s", "base-1.a", "p99(e2e){stage:base-1.a} < 5000ms", ""},
		{"error_rate{stage:chaos} < 5%", "chaos", "error_rate{stage:chaos} < 0.05", ""},
		{"p99(e2e){stage:peak < 5s", "", "", "unclosed"},
		{"p99(e2e){intent:x} < 5s", "", "", "stage and input are known"},
		{"p99(e2e){stage:peak}{input:2k-4k} < 5s", "peak", "p99(e2e){stage:peak}{input:2k-4k} < 5000ms", ""},
		{"p99(e2e){input:2k-4k, stage:peak} < 5s", "peak", "p99(e2e){stage:peak}{input:2k-4k} < 5000ms", ""},
		{"truncation_rate{input:128k+} < 10%", "", "truncation_rate{input:128k+} < 0.1", ""},
		{"p99(e2e){input:3k} < 5s", "", "", "input bucket \"3k\""},
		{"rps{input:1k-2k} > 1", "", "", "rps is not kept by input length"},
		{"p99(e2e){stage:a}{stage:b} < 5s", "", "", "given twice"},
		{"p99(e2e){stage:} < 5s", "", "", "write {stage:NAME}"},
		{"p99(e2e){stage:a b} < 5s", "", "", "stage name"},
	}
	for _, tc := range tests {
		th, err := Parse(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || th.Stage != tc.stage || th.String() != tc.canon {
			t.Errorf("Parse(%q) = %+v (%s), %v", tc.in, th, th.String(), err)
		}
	}
}
