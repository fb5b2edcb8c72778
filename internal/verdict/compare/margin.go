package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseMinEffect reads --min-effect values, each METRIC=MARGIN (or several
// joined by commas): a percentage for relative metrics (e2e_p99_ms=10%),
// percentage points for fractions (error_rate=0.5pp), or a number in the
// metric's unit for the other absolute ones (resilience_slope=0.82).
// 0 turns a metric's margin off.
func ParseMinEffect(specs []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, spec := range specs {
		for _, part := range strings.Split(spec, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			name, val, ok := strings.Cut(part, "=")
			if !ok {
				return nil, fmt.Errorf("--min-effect %q: want METRIC=MARGIN, e.g. e2e_p99_ms=10%% or error_rate=0.5pp", part)
			}
			m, ok := MetricByName(strings.TrimSpace(name))
			if !ok {
				return nil, fmt.Errorf("--min-effect %q: unknown metric %q (known: %s)", part, name, MetricNames())
			}
			v, err := parseMargin(m, strings.TrimSpace(val))
			if err != nil {
				return nil, fmt.Errorf("--min-effect %q: %v", part, err)
			}
			out[m.Name] = v
		}
	}
	return out, nil
}

func parseMargin(m Metric, s string) (float64, error) {
	num := func(t string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return 0, fmt.Errorf("%q is not a margin (a number ≥ 0)", s)
		}
		return v, nil
	}
	switch {
	case !m.Diff:
		t, ok := strings.CutSuffix(s, "%")
		if !ok && s != "0" {
			return 0, fmt.Errorf("%s is judged by its relative change: give a percentage, e.g. 10%%", m.Name)
		}
		v, err := num(t)
		return v / 100, err
	case m.Unit == "":
		t, ok := strings.CutSuffix(s, "pp")
		if !ok && s != "0" {
			return 0, fmt.Errorf("%s is a fraction judged by its difference: give percentage points, e.g. 1pp", m.Name)
		}
		v, err := num(t)
		return v / 100, err
	}
	v, err := num(strings.TrimSuffix(s, m.Unit))
	return v, err
}

// marginText is a margin as --min-effect takes it: "5 %", "1 pp" or a
// number with the unit.
func marginText(margin float64, absolute bool, unit string) string {
	switch {
	case !absolute:
		return fmt.Sprintf("%.3g %%", 100*margin)
	case unit == "":
		return fmt.Sprintf("%.3g pp", 100*margin)
	}
	return fmt.Sprintf("%.3g %s", margin, unit)
}
