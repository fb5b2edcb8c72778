package observe

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/internal/workload/tokenizer"
	"github.com/spate-dev/spate/result"
	"github.com/spate-dev/spate/sim"
)

// fakeDCGM is a dcgm-exporter on two GPUs with known power: GPU i draws
// watts[i] (GPU 1 rising by rampWPerS each second), and each GPU's
// energy counter grows by exactly its power from the value in
// testdata/dcgm-exporter-2gpu.metrics (in millijoules, as DCGM's).
type fakeDCGM struct {
	watts     [2]float64
	rampWPerS float64 // GPU 1's power rises this much per second
	noEnergy  bool    // an exporter without the energy counter
	resetAt   float64 // GPU 0's counter restarts from 0 at this second (0: never)
}

// base is each GPU's energy counter at 0 s, as in the testdata file.
var base = [2]float64{40203826145, 58114720391}

func (f fakeDCGM) power(gpu int, at float64) float64 {
	if gpu == 1 {
		return f.watts[1] + f.rampWPerS*at
	}
	return f.watts[0]
}

// energyMJ is the counter of gpu at the second at, in millijoules.
func (f fakeDCGM) energyMJ(gpu int, at float64) float64 {
	if gpu == 0 && f.resetAt > 0 && at >= f.resetAt {
		return 1000 * f.watts[0] * (at - f.resetAt)
	}
	j := f.watts[gpu] * at
	if gpu == 1 {
		j += f.rampWPerS * at * at / 2
	}
	return base[gpu] + 1000*j
}

var gpuLabel = regexp.MustCompile(`gpu="(\d)"`)

// text is the exporter's exposition at the second at: the testdata file
// with the power and energy samples' values set.
func (f fakeDCGM) text(t testing.TB, at float64) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "dcgm-exporter-2gpu.metrics"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(string(raw), "\n") {
		energyLine := strings.Contains(line, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
		if energyLine && f.noEnergy {
			continue
		}
		m := gpuLabel.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(line, "#") || !(energyLine || strings.HasPrefix(line, "DCGM_FI_DEV_POWER_USAGE{")) {
			b.WriteString(line)
			continue
		}
		gpu, _ := strconv.Atoi(m[1])
		v := f.power(gpu, at)
		if energyLine {
			v = f.energyMJ(gpu, at)
		}
		sample := line[:strings.LastIndexByte(line, ' ')]
		fmt.Fprintf(&b, "%s %s\n", sample, strconv.FormatFloat(v, 'f', -1, 64))
	}
	return b.String()
}

// scrapes are the exporter's expositions at the offsets, parsed; a
// failed scrape (nil families) at the offsets in failed.
func (f fakeDCGM) scrapes(t *testing.T, offsets []float64, failed map[float64]bool) []Scrape {
	t.Helper()
	var out []Scrape
	for _, off := range offsets {
		sc := Scrape{OffsetS: off}
		if !failed[off] {
			fams, err := ParseText(strings.NewReader(f.text(t, off)))
			if err != nil {
				t.Fatal(err)
			}
			sc.Families = fams
		}
		out = append(out, sc)
	}
	return out
}

// TestStageEnergy computes a stage's GPU energy from scrapes of a
// dcgm-exporter with known power at known offsets: 150 W and 250 W over
// 3 s are 1200 J, from the energy counters (measured) or, without them,
// the power integrated by trapezoids (estimated, exact for power that
// changes linearly); a failed scrape is bridged; a counter that restarts
// from 0 loses only what it counted before the first scrape after.
func TestStageEnergy(t *testing.T) {
	offsets := []float64{0, 0.5, 1, 2, 3}
	steady := fakeDCGM{watts: [2]float64{150, 250}}
	for _, tc := range []struct {
		name    string
		f       fakeDCGM
		offsets []float64
		failed  map[float64]bool
		endS    float64
		joules  float64
		window  float64
		source  string
		partial bool // the window misses over a tenth of the stage: warned
	}{
		{name: "energy counters", f: steady, joules: 1200, window: 3, source: EnergyMeasured},
		{name: "power only", f: fakeDCGM{watts: steady.watts, noEnergy: true}, joules: 1200, window: 3, source: EnergyEstimated},
		// GPU 1 from 250 W to 310 W: 150·3 + 250·3 + 20·3²/2 = 1290 J.
		{name: "rising power, counters", f: fakeDCGM{watts: steady.watts, rampWPerS: 20}, joules: 1290, window: 3, source: EnergyMeasured},
		{name: "rising power, trapezoids", f: fakeDCGM{watts: steady.watts, rampWPerS: 20, noEnergy: true}, joules: 1290, window: 3, source: EnergyEstimated},
		{name: "failed scrape bridged, counters", f: steady, failed: map[float64]bool{1: true, 2: true}, joules: 1200, window: 3, source: EnergyMeasured},
		{name: "failed scrape bridged, power", f: fakeDCGM{watts: steady.watts, noEnergy: true}, failed: map[float64]bool{1: true}, joules: 1200, window: 3, source: EnergyEstimated},
		// GPU 0's counter restarts at 1.5 s: from 1 s to 2 s it counts its
		// 0.5 s since the restart, 75 J of the 150.
		{name: "counter reset", f: fakeDCGM{watts: steady.watts, resetAt: 1.5}, joules: 1125, window: 3, source: EnergyMeasured},
		{name: "last scrape failed", f: steady, failed: map[float64]bool{3: true}, joules: 800, window: 2, source: EnergyMeasured},
		// The stage ended at 2.5 s, between the last two scrapes.
		{name: "ended before the last scrape, counters", f: steady, endS: 2.5, joules: 1000, window: 2.5, source: EnergyMeasured},
		{name: "ended before the last scrape, trapezoids", f: fakeDCGM{watts: steady.watts, rampWPerS: 20, noEnergy: true}, endS: 2.5, joules: 1000 + 20*2.5*2.5/2, window: 2.5, source: EnergyEstimated},
		// The first scrape came 1 s late (a stalled machine): 2 of the
		// stage's 3 s counted, and the result says so.
		{name: "first scrape late", f: steady, offsets: []float64{1, 2, 3}, endS: 3, joules: 800, window: 2, source: EnergyMeasured, partial: true},
		{name: "first scrape a little late", f: steady, offsets: []float64{0.2, 1, 2, 3}, endS: 3, joules: 1120, window: 2.8, source: EnergyMeasured},
		{name: "one scrape", f: steady, offsets: []float64{0}},
		{name: "two scrapes, one failed", f: steady, offsets: []float64{0, 1}, failed: map[float64]bool{1: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			offs := offsets
			if tc.offsets != nil {
				offs = tc.offsets
			}
			scrapes := tc.f.scrapes(t, offs, tc.failed)
			srv := &result.Server{}
			energyFigures(srv, scrapes, tc.endS, 240, 30)
			if tc.source == "" {
				if srv.Figures != nil || srv.EnergySource != "" {
					t.Fatalf("figures %v from %q, want none", srv.Figures, srv.EnergySource)
				}
				return
			}
			f := srv.Figures
			if srv.EnergySource != tc.source {
				t.Errorf("source %q, want %q", srv.EnergySource, tc.source)
			}
			near := func(name string, got, want float64) {
				t.Helper()
				if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
			near("gpu_energy_j", f["gpu_energy_j"], tc.joules)
			near("gpu_energy_window_s", f["gpu_energy_window_s"], tc.window)
			near("gpu_power_mean_w", f["gpu_power_mean_w"], tc.joules/tc.window)
			near("gpu_energy_j_per_output_token", f["gpu_energy_j_per_output_token"], tc.joules/240)
			near("gpu_energy_j_per_request", f["gpu_energy_j_per_request"], tc.joules/30)
			near("gpu_energy_output_tokens", f["gpu_energy_output_tokens"], 240)
			near("gpu_energy_requests", f["gpu_energy_requests"], 30)
			// The warning gives the window, the stage and the share
			// missed: 1 s of 3 is 33 %.
			warned := slices.ContainsFunc(srv.Warnings, func(w string) bool { return strings.HasPrefix(w, "GPU energy covers") })
			if warned != tc.partial {
				t.Errorf("warnings %q: want a partial window's warning %v", srv.Warnings, tc.partial)
			}
			if want := fmt.Sprintf("GPU energy covers %.2f s of the stage's %.2f s", tc.window, tc.endS); tc.partial &&
				!slices.ContainsFunc(srv.Warnings, func(w string) bool { return strings.HasPrefix(w, want) && strings.HasSuffix(w, "low by about 33 %") }) {
				t.Errorf("warnings %q: want %q ... low by about 33 %%", srv.Warnings, want)
			}
		})
	}
}

// TestComputePowerSeries: the power gauge and the energy counter's rate
// are summed over the two GPUs, in watts (the counter's millijoules per
// second divided by 1000), never "1/s".
func TestComputePowerSeries(t *testing.T) {
	f := fakeDCGM{watts: [2]float64{150, 250}}
	got, warns := Compute(f.scrapes(t, []float64{0, 0.5, 1.5}, nil), nil)
	if len(warns) > 0 {
		t.Errorf("warnings %q", warns)
	}
	for _, tc := range []struct {
		name, metric string
		first        *float64
	}{
		{"gpu_power_watts", "DCGM_FI_DEV_POWER_USAGE", ptr(400)},
		{"gpu_energy_j_per_s", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", nil},
	} {
		s, ok := got[tc.name]
		if !ok {
			t.Errorf("no %s series; have %v", tc.name, keys(got))
			continue
		}
		if s.Unit != "W" || s.Metric != tc.metric || len(s.Values) != 3 {
			t.Errorf("%s: unit %q metric %q values %v", tc.name, s.Unit, s.Metric, vals(s))
			continue
		}
		if (s.Values[0] == nil) != (tc.first == nil) {
			t.Errorf("%s: first value %v", tc.name, vals(s))
		}
		for i := 1; i < 3; i++ {
			if s.Values[i] == nil || math.Abs(*s.Values[i]-400) > 1e-6 {
				t.Errorf("%s: values %v, want 400 W", tc.name, vals(s))
			}
		}
	}
	// The other GPU series of the same exposition: utilization the
	// fuller GPU's (87 %), memory summed (66710 + 78819 MiB).
	if v := vals(got["gpu_utilization"]); len(v) != 3 || math.Abs(v[0]-0.87) > 1e-9 {
		t.Errorf("gpu_utilization %v", v)
	}
	if v := vals(got["gpu_memory_used_bytes"]); len(v) != 3 || v[0] != float64((66710+78819)<<20) {
		t.Errorf("gpu_memory_used_bytes %v", v)
	}
}

// TestEnergyPerTokenAgainstFakeExporter runs the simulator (8 output
// tokens per answer) at 20 requests/s for 1.5 s while scraping a fake
// dcgm-exporter on loopback whose two GPUs draw 150 W and 250 W: the
// stage's energy is 400 W × the seconds from its first scrape (at its
// start) to its end, and the joules per
// output token and per request are that over the stage's output tokens
// and requests. With the energy counters (measured), with only the power
// gauge (estimated), and with the exporter restarting mid-stage (a
// failed scrape, then GPU 0's counter from 0: what GPU 0 drew between
// the exporter's last answer before and the restart is lost).
func TestEnergyPerTokenAgainstFakeExporter(t *testing.T) {
	const (
		tokens   = 8
		interval = 200 * time.Millisecond
		stage    = 1500 * time.Millisecond
		jitter   = 0.1 // seconds: a scrape's start to the exporter's reading, under load
	)
	simulator, err := sim.Start(sim.Deterministic(10*time.Millisecond, 2*time.Millisecond, tokens), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer simulator.Close()
	tok, err := tokenizer.CL100K()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		f      fakeDCGM
		down   [2]float64 // the exporter answers 503 from, until at least (s); see the handler
		source string
	}{
		{name: "energy counters", f: fakeDCGM{watts: [2]float64{150, 250}}, source: EnergyMeasured},
		{name: "power only", f: fakeDCGM{watts: [2]float64{150, 250}, noEnergy: true}, source: EnergyEstimated},
		{name: "exporter restart", f: fakeDCGM{watts: [2]float64{150, 250}}, down: [2]float64{0.5, 0.7}, source: EnergyMeasured},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var t0 time.Time
			// The restarting exporter is down from down[0] until down[1]
			// or until it has refused a scrape, whichever is later, and
			// comes back with GPU 0's counter from 0 (resetAt, the end of
			// the restart). Under load (three suites at once on 2 cores)
			// a fixed 0.5-0.7 s window was missed: offsets [… 0.476
			// 1.006 …], the scrape sent at 0.476 s reached the exporter
			// after 0.7 s, no scrape failed and no warning was due, only
			// the counter's reset, which the product counts silently as
			// documented (docs/observability.md). The premise "a scrape
			// fails while the exporter restarts" is now made true by the
			// exporter itself, whenever the scrapes come; the product
			// must still warn of that failure, bridge it and count the
			// reset, and a product that drops the warning fails every run.
			var mu sync.Mutex
			refusedAt, lastOK := -1.0, 0.0 // the first refusal; the last answer before the restart (s)
			dcgm := tc.f
			exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				at := time.Since(t0).Seconds()
				mu.Lock()
				if tc.down[1] > 0 && at >= tc.down[0] && (at < tc.down[1] || refusedAt < 0) {
					if refusedAt < 0 {
						refusedAt = at
					}
					mu.Unlock()
					http.Error(w, "restarting", http.StatusServiceUnavailable)
					return
				}
				if tc.down[1] > 0 && at >= tc.down[0] {
					dcgm.resetAt = max(tc.down[1], refusedAt)
				} else {
					lastOK = at
				}
				text := dcgm.text(t, at)
				mu.Unlock()
				w.Header().Set("Content-Type", "text/plain; version=0.0.4")
				fmt.Fprint(w, text)
			}))
			defer exporter.Close()
			client, err := openai.New(openai.Config{BaseURL: simulator.URL, API: openai.Chat, Model: sim.DefaultModel, Stream: true, Timeout: 10 * time.Second, Tokenizer: tok})
			if err != nil {
				t.Fatal(err)
			}
			obs := New(Config{Endpoints: []string{exporter.URL + "/metrics"}, Interval: interval})
			defer obs.Close()
			t0 = time.Now()
			res, err := runner.Run(context.Background(), runner.Plan{
				Stages:    []runner.Stage{{Name: "s", Arrival: "constant", Rate: 20, Duration: stage}},
				Source:    workload.Synthetic{Input: workload.Lengths{Mean: 8}, Output: workload.Lengths{Mean: tokens}, Seed: 1},
				Client:    client,
				Observers: []runner.Observer{obs},
			})
			if err != nil {
				t.Fatal(err)
			}
			sc := res.Scenarios[0]
			srv := sc.Server
			if srv == nil || srv.Figures == nil {
				t.Fatalf("no server figures: %+v", srv)
			}
			f := srv.Figures
			t.Logf("%s: %.1f J over %.3f s (stage %.3f s), %.1f W mean, %.4f J/token over %v tokens, %.3f J/request over %v; offsets %v, warnings %q",
				srv.EnergySource, f["gpu_energy_j"], f["gpu_energy_window_s"], sc.DurationS, f["gpu_power_mean_w"],
				f["gpu_energy_j_per_output_token"], f["gpu_energy_output_tokens"], f["gpu_energy_j_per_request"], f["gpu_energy_requests"], srv.OffsetsS, srv.Warnings)
			if srv.EnergySource != tc.source {
				t.Errorf("energy source %q, want %q", srv.EnergySource, tc.source)
			}
			if sc.Requests.Failed != 0 || sc.Tokens.Output != int64(tokens*sc.Requests.Total) {
				t.Fatalf("the simulator's answers: %+v, %d output tokens", sc.Requests, sc.Tokens.Output)
			}
			if f["gpu_energy_output_tokens"] != float64(sc.Tokens.Output) || f["gpu_energy_requests"] != float64(sc.Requests.Total) {
				t.Errorf("energy over %v tokens and %v requests, the stage had %d and %d", f["gpu_energy_output_tokens"], f["gpu_energy_requests"], sc.Tokens.Output, sc.Requests.Total)
			}
			// The window is from the first scrape, at the stage's start, to
			// the stage's end (the last scrape comes after it has drained).
			window := f["gpu_energy_window_s"]
			first, last := srv.OffsetsS[0], srv.OffsetsS[len(srv.OffsetsS)-1]
			if math.Abs(window-(min(last, sc.DurationS)-first)) > 1e-9 {
				t.Errorf("window %.3f s, scrapes %.3f–%.3f s, stage %.3f s: want the first scrape to the stage's end", window, first, last, sc.DurationS)
			}
			// A stalled machine can make the first scrape late (0.300 s
			// seen, three suites at once): the energy then covers less
			// than the stage, which the result must say; the stage's
			// 400 W × its duration is judged only when it covers it.
			covers := math.Abs(window-sc.DurationS) <= interval.Seconds()
			partial := slices.ContainsFunc(srv.Warnings, func(w string) bool { return strings.HasPrefix(w, "GPU energy covers") })
			if !covers && sc.DurationS-window > 0.1*sc.DurationS && !partial {
				t.Errorf("window %.3f s of the stage's %.3f s, warnings %q: want the partial window's warning", window, sc.DurationS, srv.Warnings)
			}
			if !covers {
				t.Logf("the first scrape at %.3f s: the energy covers %.3f s of the stage's %.3f s", first, window, sc.DurationS)
			}
			joules := f["gpu_energy_j"]
			lo, hi := 400*(window-jitter), 400*(window+jitter)
			if tc.down[1] > 0 {
				mu.Lock()
				lost := 150 * (dcgm.resetAt - lastOK) // GPU 0 from its last answer to the restart
				t.Logf("exporter down from %.3f s (first refusal at %.3f s), counter from 0 at %.3f s, last answer before at %.3f s: %.1f J of GPU 0 lost",
					tc.down[0], refusedAt, dcgm.resetAt, lastOK, lost)
				mu.Unlock()
				lo -= lost
			}
			if joules < lo || joules > hi {
				t.Errorf("%.1f J, want 400 W × %.3f s = %.1f J (in [%.1f, %.1f])", joules, window, 400*window, lo, hi)
			}
			if covers && math.Abs(joules-400*sc.DurationS) > 400*interval.Seconds()+(400*window-lo) {
				t.Errorf("%.1f J, want 400 W × the stage's %.3f s = %.1f J, within a scrape interval", joules, sc.DurationS, 400*sc.DurationS)
			}
			if got, want := f["gpu_energy_j_per_output_token"], joules/float64(sc.Tokens.Output); math.Abs(got-want) > 1e-9 {
				t.Errorf("J per output token %v, want %v", got, want)
			}
			if got, want := f["gpu_energy_j_per_request"], joules/float64(sc.Requests.Total); math.Abs(got-want) > 1e-9 {
				t.Errorf("J per request %v, want %v", got, want)
			}
			if s := srv.Series["gpu_power_watts"]; s.Unit != "W" {
				t.Errorf("gpu_power_watts unit %q", s.Unit)
			}
			if s, ok := srv.Series["gpu_energy_j_per_s"]; ok != !tc.f.noEnergy || (ok && s.Unit != "W") {
				t.Errorf("gpu_energy_j_per_s present %v unit %q", ok, s.Unit)
			}
			// The warning names the first failure's cause, which a stall
			// can make a timeout rather than the 503, and the count.
			if tc.down[1] > 0 && !strings.Contains(strings.Join(srv.Warnings, "\n"), "scrapes failed") {
				t.Errorf("no warning of the failed scrape in %q", srv.Warnings)
			}
		})
	}
}

// FuzzStageEnergy: whatever two scrapes an exporter served, the energy
// figures are finite and not negative (they go into JSON, which has no
// NaN), and a stage has them only with their source.
func FuzzStageEnergy(f *testing.F) {
	steady := fakeDCGM{watts: [2]float64{150, 250}}
	f.Add(steady.text(f, 0), steady.text(f, 1), 0.5)
	f.Add("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} NaN\n", "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} +Inf\n", 0.0)
	f.Add("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"} 5\n", "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"} -Inf\n", 2.0)
	f.Fuzz(func(t *testing.T, a, b string, endS float64) {
		var scrapes []Scrape
		for i, text := range []string{a, b} {
			fams, err := ParseText(strings.NewReader(text))
			if err != nil {
				fams = nil
			}
			scrapes = append(scrapes, Scrape{OffsetS: float64(i), Families: fams})
		}
		srv := &result.Server{}
		energyFigures(srv, scrapes, endS, 10, 2)
		if (srv.Figures != nil) != (srv.EnergySource != "") {
			t.Fatalf("figures %v, source %q", srv.Figures, srv.EnergySource)
		}
		for k, v := range srv.Figures {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("%s = %v", k, v)
			}
		}
	})
}
