package observe

import (
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// TestRateUnit: a --scrape-metric counter's rate is in its unit per
// second, from dcgm-exporter's "(in X)" HELP or the name's suffix.
func TestRateUnit(t *testing.T) {
	for _, tc := range []struct{ name, help, want string }{
		{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", "mW"},
		{"DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "Total number of bytes transmitted through PCIe TX (in KB) via NVML.", "KB/s"},
		{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "Total number of PCIe retries.", "1/s"},
		{"nv_energy_consumption_joules_total", "", "W"},
		{"vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", "1/s"},
		{"vllm:generation_tokens_total", "Number of generation tokens processed.", "tokens/s"},
		{"llamacpp:prompt_seconds_total", "Prompt process time", "s/s"},
		{"process_network_bytes_total", "", "bytes/s"},
	} {
		name, help := tc.name, tc.help
		if got := rateUnit(&dto.MetricFamily{Name: &name, Help: &help}); got != tc.want {
			t.Errorf("%s (%q): %q, want %q", tc.name, tc.help, got, tc.want)
		}
	}
}

// TestCustomEnergyCounterRate: DCGM's energy counter kept with
// --scrape-metric is a rate in mW (millijoules per second), 400 000 mW
// for GPUs drawing 150 W and 250 W — not "1/s".
func TestCustomEnergyCounterRate(t *testing.T) {
	f := fakeDCGM{watts: [2]float64{150, 250}}
	sel := MustSelector("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
	got, warns := Compute(f.scrapes(t, []float64{0, 2}, nil), []Selector{sel})
	s, ok := got["rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION)"]
	if !ok || len(warns) > 0 {
		t.Fatalf("series %v, warnings %q", keys(got), warns)
	}
	if s.Unit != "mW" || s.Values[1] == nil || math.Abs(*s.Values[1]-400000) > 1e-6 {
		t.Errorf("unit %q values %v, want 400000 mW", s.Unit, vals(s))
	}
}
