package observe

import (
	"bufio"
	"bytes"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorded parses the body of a /metrics response recorded byte for byte
// from a real server (copied from the recordings of issue 35: llama.cpp's
// llama-server b4747 started with --metrics, and llm-d-inference-sim
// v0.10.2, which serves vLLM's names).
func recorded(t *testing.T, name string) Families {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
	if err != nil {
		t.Fatalf("reading the recorded response %s: %v", name, err)
	}
	defer resp.Body.Close()
	f, err := ParseText(resp.Body)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f
}

// grown is f with every counter (and histogram count) doubled: the scrape
// of a server that did again, since the recorded one, all it had done.
func grown(t *testing.T, name string) Families {
	f := recorded(t, name)
	for _, mf := range f {
		for _, m := range mf.GetMetric() {
			if c := m.GetCounter(); c != nil {
				c.Value = ptr(2 * c.GetValue())
			}
			if h := m.GetHistogram(); h != nil {
				n := 2 * h.GetSampleCount()
				h.SampleCount = &n
				for _, b := range h.GetBucket() {
					cum := 2 * b.GetCumulativeCount()
					b.CumulativeCount = &cum
				}
			}
		}
	}
	return f
}

// TestComputeRecordedServers computes the known series from two scrapes,
// 2 s apart, of the exposition a real server served (the second with its
// counters doubled): each series comes from the metric the docs name for
// that server, gauges are the recorded values and rates are half the
// recorded counters. The vLLM-compatible server is the regression check of
// the mapping that was there before llama.cpp's.
func TestComputeRecordedServers(t *testing.T) {
	type want struct {
		metric string
		value  float64 // of the second scrape
	}
	for _, tc := range []struct {
		file string
		want map[string]want
	}{
		{"llama.cpp-b4747-metrics.response", map[string]want{
			"kv_cache_usage":          {"llamacpp:kv_cache_usage_ratio", 0.250854},
			"requests_running":        {"llamacpp:requests_processing", 0},
			"requests_waiting":        {"llamacpp:requests_deferred", 0},
			"prompt_tokens_per_s":     {"llamacpp:prompt_tokens_total", 3050.0 / 2},
			"generation_tokens_per_s": {"llamacpp:tokens_predicted_total", 248.0 / 2},
		}},
		{"llm-d-inference-sim-v0.10.2-metrics.response", map[string]want{
			"kv_cache_usage":          {"vllm:kv_cache_usage_perc", 0},
			"requests_running":        {"vllm:num_requests_running", 0},
			"requests_waiting":        {"vllm:num_requests_waiting", 0},
			"prompt_tokens_per_s":     {"vllm:prompt_tokens_total", 2894.0 / 2},
			"generation_tokens_per_s": {"vllm:generation_tokens_total", 100.0 / 2},
			"requests_finished_per_s": {"vllm:request_success_total", 14.0 / 2},
			// Histograms: the growth between the scrapes is the recorded
			// histogram; only the source is checked here (the quantiles'
			// arithmetic is TestComputeKnownSeries's).
			"server_ttft_p50_ms": {"vllm:time_to_first_token_seconds", -1},
			"server_itl_p99_ms":  {"vllm:inter_token_latency_seconds", -1},
			"server_e2e_p50_ms":  {"vllm:e2e_request_latency_seconds", -1},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			series, warns := Compute([]Scrape{{0, recorded(t, tc.file)}, {2, grown(t, tc.file)}}, nil)
			if len(warns) > 0 {
				t.Errorf("warnings %q", warns)
			}
			for name, w := range tc.want {
				s, ok := series[name]
				if !ok {
					t.Errorf("no series %s (have %v)", name, keys(series))
					continue
				}
				if s.Metric != w.metric {
					t.Errorf("%s from %q, want %q", name, s.Metric, w.metric)
				}
				got := vals(s)
				if len(got) != 2 || math.IsNaN(got[1]) {
					t.Errorf("%s = %v, want a value at the second scrape", name, got)
					continue
				}
				if w.value >= 0 && !near(got[1], w.value) {
					t.Errorf("%s = %v at the second scrape, want %v", name, got[1], w.value)
				}
			}
			o := New(Config{Endpoints: []string{"http://127.0.0.1:1/metrics"}})
			srv := o.server(&stageRun{scrapes: []Scrape{{0, recorded(t, tc.file)}}, fails: make([]failure, 1)}, 0)
			for _, w := range srv.Warnings {
				if strings.Contains(w, "known server") {
					t.Errorf("warning %q on a known server's metrics", w)
				}
			}
		})
	}
}

// TestUnknownServerWarningNamesEveryServer scrapes metrics of no known
// server: the warning names every server of the list.
func TestUnknownServerWarningNamesEveryServer(t *testing.T) {
	f, err := ParseText(strings.NewReader("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := New(Config{Endpoints: []string{"http://127.0.0.1:1/metrics"}})
	srv := o.server(&stageRun{scrapes: []Scrape{{0, f}, {1, f}}, fails: make([]failure, 1)}, 0)
	var warn string
	for _, w := range srv.Warnings {
		if strings.Contains(w, "known server") {
			warn = w
		}
	}
	if warn == "" {
		t.Fatalf("no warning about known servers in %q", srv.Warnings)
	}
	for _, s := range servers {
		if !strings.Contains(warn, s.name) {
			t.Errorf("warning %q does not name %s", warn, s.name)
		}
	}
}

// TestKnownMetricsTableMatchesCode holds docs/observability.md's table of
// known metrics to the code: its server columns are servers, in order,
// every source of every known series is in its series' row, in the column
// of the server whose prefix it has (one server for each), and every
// metric a cell names is such a source.
func TestKnownMetricsTableMatchesCode(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "### Known metrics")
	if i < 0 {
		t.Fatal("docs/observability.md has no Known metrics section")
	}
	var header []string
	rows := map[string][]string{} // by the row's first code span
	for _, line := range strings.Split(doc[i:], "\n") {
		if !strings.HasPrefix(line, "| ") {
			if header != nil {
				break // the table's end
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		switch {
		case header == nil:
			header = cells
		case strings.HasPrefix(cells[0], "---"):
		default:
			name, _, _ := strings.Cut(strings.TrimPrefix(cells[0], "`"), "`")
			rows[name] = cells
		}
	}
	var names []string
	for _, s := range servers {
		names = append(names, s.name)
	}
	if len(header) < 2 || strings.Join(header[2:], "|") != strings.Join(names, "|") {
		t.Fatalf("table columns %q, want series, unit and %q", header, names)
	}
	named := map[string]bool{} // row name + column + selector
	for _, sp := range known {
		row := rows[sp.name]
		if sp.kind == quantileKind {
			row = rows[sp.name+"_p50"+unitSuffix(sp.unit)]
		}
		if row == nil {
			t.Errorf("no row for %s", sp.name)
			continue
		}
		if len(row) != len(header) {
			t.Errorf("row %s has %d cells, the header %d", sp.name, len(row), len(header))
			continue
		}
		if row[1] != sp.unit {
			t.Errorf("row %s: unit %q, the code's %q", sp.name, row[1], sp.unit)
		}
		for _, s := range sp.sources {
			for _, sel := range []Selector{s.sel, s.den} {
				if sel.Name == "" {
					continue
				}
				col := -1
				for j, srv := range servers {
					for _, p := range srv.prefixes {
						if strings.HasPrefix(sel.Name, p) {
							if col >= 0 {
								t.Errorf("%s has the prefixes of two servers", sel)
							}
							col = j
						}
					}
				}
				if col < 0 {
					t.Errorf("%s (series %s) is of no known server", sel, sp.name)
					continue
				}
				named[row[0]+"|"+servers[col].name+"|"+sel.String()] = true
				if !strings.Contains(row[2+col], "`"+sel.String()+"`") {
					t.Errorf("row %s, column %s: %q does not name %s", sp.name, servers[col].name, row[2+col], sel)
				}
			}
		}
	}
	for _, row := range rows {
		for j := 2; j < len(row) && j < len(header); j++ {
			parts := strings.Split(row[j], "`")
			for k := 1; k < len(parts); k += 2 {
				if !named[row[0]+"|"+header[j]+"|"+parts[k]] {
					t.Errorf("row %s, column %s names %s, which the code does not take there", row[0], header[j], parts[k])
				}
			}
		}
	}
}
