package observe

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/spate-dev/spate/result"
)

// expo writes one scrape's exposition: a counter, two labelled gauges,
// prefix cache counters and a TTFT histogram (cumulative bucket counts for
// le 0.1, 0.2, 0.4 and the count).
func expo(t *testing.T, counter, gaugeA, gaugeB, hits, queries float64, b1, b2, b4, count int) Families {
	t.Helper()
	text := fmt.Sprintf(`# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="m"} %g
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="a"} %g
vllm:num_requests_waiting{engine="b"} %g
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="a"} %g
vllm:kv_cache_usage_perc{engine="b"} %g
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total %g
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total %g
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.1"} %d
vllm:time_to_first_token_seconds_bucket{le="0.2"} %d
vllm:time_to_first_token_seconds_bucket{le="0.4"} %d
vllm:time_to_first_token_seconds_bucket{le="+Inf"} %d
vllm:time_to_first_token_seconds_sum 0
vllm:time_to_first_token_seconds_count %d
# TYPE custom_depth gauge
custom_depth{queue="x"} 7
custom_depth{queue="y"} 9
`, counter, gaugeA, gaugeB, gaugeA/10, gaugeB/10, hits, queries, b1, b2, b4, count, count)
	f, err := ParseText(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// vals turns a series into float64s, NaN for null.
func vals(s result.ServerSeries) []float64 {
	out := make([]float64, len(s.Values))
	for i, v := range s.Values {
		out[i] = math.NaN()
		if v != nil {
			out[i] = *v
		}
	}
	return out
}

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) < 1e-9
}

func TestComputeKnownSeries(t *testing.T) {
	nan := math.NaN()
	// Irregular offsets, a counter reset at the 4th scrape (the server
	// restarted), a missing scrape at the 6th.
	scrapes := []Scrape{
		{0, expo(t, 100, 1, 2, 0, 0, 0, 0, 0, 0)},
		{1, expo(t, 110, 3, 4, 5, 10, 0, 10, 10, 10)},   // 10 TTFTs in (0.1, 0.2]
		{2.5, expo(t, 140, 0, 0, 5, 10, 0, 10, 20, 20)}, // 10 more in (0.2, 0.4]: p99 0.2 + 0.2·0.99
		{3.5, expo(t, 5, 2, 2, 1, 4, 4, 4, 4, 4)},       // reset: 4 TTFTs ≤ 0.1
		{4.5, expo(t, 25, 2, 2, 1, 4, 4, 4, 4, 4)},      // nothing new
		{5.5, nil},
		{6.5, expo(t, 35, 2, 2, 1, 4, 4, 4, 4, 4)},
	}
	series, warns := Compute(scrapes, []Selector{
		MustSelector(`custom_depth{queue="y"}`),
		MustSelector(`vllm:generation_tokens_total`),
		MustSelector(`vllm:time_to_first_token_seconds`),
		MustSelector(`absent_metric`),
	})
	for name, want := range map[string][]float64{
		// (110−100)/1, (140−110)/1.5, reset: 5/1, (25−5)/1, no scrape, no previous
		"generation_tokens_per_s":               {nan, 10, 20, 5, 20, nan, nan},
		"rate(vllm:generation_tokens_total)":    {nan, 10, 20, 5, 20, nan, nan},
		"requests_waiting":                      {3, 7, 0, 4, 4, nan, 4}, // summed over engines
		"kv_cache_usage":                        {0.2, 0.4, 0, 0.2, 0.2, nan, 0.2},
		"prefix_cache_hit_rate":                 {nan, 0.5, nan, 0.25, nan, nan, nan},
		"server_ttft_p50_ms":                    {nan, 150, 300, 50, nan, nan, nan},
		"server_ttft_p99_ms":                    {nan, 199, 398, 99, nan, nan, nan},
		"p50(vllm:time_to_first_token_seconds)": {nan, 0.15, 0.3, 0.05, nan, nan, nan},
		`custom_depth{queue="y"}`:               {9, 9, 9, 9, 9, nan, 9},
		"p99(vllm:time_to_first_token_seconds)": {nan, 0.199, 0.398, 0.099, nan, nan, nan},
	} {
		s, ok := series[name]
		if !ok {
			t.Errorf("no series %s (have %v)", name, keys(series))
			continue
		}
		got := vals(s)
		if len(got) != len(want) {
			t.Errorf("%s: %d values, want %d", name, len(got), len(want))
			continue
		}
		for i := range want {
			if !near(got[i], want[i]) {
				t.Errorf("%s = %v, want %v", name, got, want)
				break
			}
		}
	}
	if s := series["server_ttft_p50_ms"]; s.Unit != "ms" || s.Metric != "vllm:time_to_first_token_seconds" {
		t.Errorf("server_ttft_p50_ms unit %q metric %q", s.Unit, s.Metric)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "absent_metric") {
		t.Errorf("warnings %q, want one about absent_metric", warns)
	}
	if _, ok := series["requests_running"]; ok {
		t.Error("requests_running present though no scrape had it")
	}
}

func keys(m map[string]result.ServerSeries) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestQuantileInfBucket(t *testing.T) {
	b := buckets{upper: []float64{1, 2, math.Inf(1)}, cum: []float64{1, 2, 10}, count: 10}
	if v, ok := b.quantile(0.99); !ok || v != 2 {
		t.Errorf("p99 in the +Inf bucket = %v, %v; want the highest finite bound 2", v, ok)
	}
	if v, ok := b.quantile(0.05); !ok || v != 0.5 {
		t.Errorf("p5 = %v, want 0.5", v)
	}
	if _, ok := (buckets{}).quantile(0.5); ok {
		t.Error("quantile of nothing")
	}
}

func TestComputeCustomUnits(t *testing.T) {
	f := expo(t, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	series, _ := Compute([]Scrape{{0, f}, {1, f}}, []Selector{MustSelector(`custom_depth{queue="x"}`), MustSelector("vllm:time_to_first_token_seconds"), MustSelector("vllm:prefix_cache_hits_total")})
	for name, unit := range map[string]string{`custom_depth{queue="x"}`: "value", "p50(vllm:time_to_first_token_seconds)": "value", "rate(vllm:prefix_cache_hits_total)": "1/s", "kv_cache_usage": "ratio"} {
		if s, ok := series[name]; !ok || s.Unit != unit {
			t.Errorf("%s: present %v, unit %q, want %q", name, ok, s.Unit, unit)
		}
	}
}

func ptr(v float64) *float64 { return &v }

// TestNonFiniteValuesAreAbsent: NaN and ±Inf in the exposition (allowed
// there, and what a summary with no observations reports) leave their
// scrapes absent from the series, with a warning naming the series, and
// the server section still encodes as JSON (it has no number for them: a
// run whose server said NaN lost its result file before).
func TestNonFiniteValuesAreAbsent(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	scrapes := []Scrape{
		{OffsetS: 0, Families: expo(t, 100, 1, 2, 0, 0, 0, 0, 0, 0)},
		{OffsetS: 1, Families: expo(t, nan, nan, 2, 0, 0, 0, 0, 0, 0)},
		{OffsetS: 2, Families: expo(t, 300, inf, -inf, 0, 0, 0, 0, 0, 0)},
		{OffsetS: 3, Families: expo(t, 400, 3, 4, 0, 0, 0, 0, 0, 0)},
	}
	custom, err := ParseSelector(`custom_depth{queue="x"}`)
	if err != nil {
		t.Fatal(err)
	}
	series, warns := Compute(scrapes, []Selector{custom})
	// requests_waiting sums the two engines: NaN + 2 and Inf - Inf are not numbers.
	if got := vals(series["requests_waiting"]); !near(got[0], 3) || !math.IsNaN(got[1]) || !math.IsNaN(got[2]) || !near(got[3], 7) {
		t.Errorf("requests_waiting = %v, want [3 null null 7]", got)
	}
	// The counter's rate: the increase into and out of the NaN scrape is unknown.
	if got := vals(series["generation_tokens_per_s"]); !math.IsNaN(got[1]) || !math.IsNaN(got[2]) || !near(got[3], 100) {
		t.Errorf("generation_tokens_per_s = %v, want [null null null 100]", got)
	}
	var found bool
	for _, w := range warns {
		if strings.Contains(w, "NaN or ±Inf") && strings.Contains(w, "requests_waiting") {
			found = true
		}
	}
	if !found {
		t.Errorf("no warning names requests_waiting's NaN or ±Inf values: %q", warns)
	}
	offsets := []float64{0, 1, 2, 3}
	figs, _ := Figures(offsets, series, []float64{100, 200, math.NaN(), 300})
	for k, v := range figs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("figure %s = %v", k, v)
		}
	}
	if _, err := json.Marshal(result.Server{OffsetsS: offsets, Series: series, Figures: figs, Warnings: warns}); err != nil {
		t.Errorf("the server section does not encode: %v", err)
	}
}
