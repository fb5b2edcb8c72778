package metrics

import (
	"fmt"
	"strings"

	"github.com/spate-dev/spate/result"
)

// EnergyText says in words a stage's GPU energy from its scraped server
// metrics (package observe, docs/observability.md), e.g. "GPU 400 W mean,
// 592 J (measured), 2.47 J/output token, 19.7 J/request"; "" without it.
// The console's server line, the Markdown notes and the HTML report's
// energy block all print it.
func EnergyText(s *result.Server) string {
	if s == nil || s.EnergySource == "" {
		return ""
	}
	f := s.Figures
	joules, ok := f["gpu_energy_j"]
	if !ok {
		return ""
	}
	parts := []string{fmt.Sprintf("GPU %.0f W mean, %.0f J (%s)", f["gpu_power_mean_w"], joules, s.EnergySource)}
	if v, ok := f["gpu_energy_j_per_output_token"]; ok {
		parts = append(parts, fmt.Sprintf("%.3g J/output token", v))
	}
	if v, ok := f["gpu_energy_j_per_request"]; ok {
		parts = append(parts, fmt.Sprintf("%.3g J/request", v))
	}
	return strings.Join(parts, ", ")
}
