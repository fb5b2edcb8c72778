package metrics

import (
	"testing"

	"github.com/spate-dev/spate/result"
)

func TestEnergyText(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *result.Server
		want string
	}{
		{"none", nil, ""},
		{"no energy", &result.Server{Figures: map[string]float64{"kv_cache_usage_peak": 0.5}}, ""},
		{"measured", &result.Server{EnergySource: "measured", Figures: map[string]float64{
			"gpu_energy_j": 592.1, "gpu_power_mean_w": 400.4, "gpu_energy_j_per_output_token": 2.4672, "gpu_energy_j_per_request": 19.738}},
			"GPU 400 W mean, 592 J (measured), 2.47 J/output token, 19.7 J/request"},
		{"estimated, no request", &result.Server{EnergySource: "estimated", Figures: map[string]float64{
			"gpu_energy_j": 120, "gpu_power_mean_w": 60}},
			"GPU 60 W mean, 120 J (estimated)"},
	} {
		if got := EnergyText(tc.s); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
