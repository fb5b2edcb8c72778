package metrics

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// SLO holds per-request service-level objectives; a zero field is unset.
type SLO struct {
	TTFT time.Duration // time to first token
	TPOT time.Duration // time per output token after the first
	ITL  time.Duration // the request's largest inter-token gap
	E2E  time.Duration // end to end
}

// ParseSLO parses "ttft=500ms,tpot=50ms" as given to --slo. Keys are ttft,
// tpot, itl and e2e; values are Go durations.
func ParseSLO(s string) (SLO, error) {
	var slo SLO
	if strings.TrimSpace(s) == "" {
		return slo, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return slo, fmt.Errorf("SLO %q: want KEY=DURATION, e.g. ttft=500ms", part)
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return slo, fmt.Errorf("SLO %q: %q is not a positive duration such as 500ms", part, v)
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "ttft":
			slo.TTFT = d
		case "tpot":
			slo.TPOT = d
		case "itl":
			slo.ITL = d
		case "e2e", "e2el":
			slo.E2E = d
		default:
			return slo, fmt.Errorf("SLO %q: unknown key %q (use ttft, tpot, itl or e2e)", part, k)
		}
	}
	return slo, nil
}

// Millis returns the set objectives in milliseconds, keyed by name.
func (s SLO) Millis() map[string]float64 {
	m := map[string]float64{}
	add := func(k string, d time.Duration) {
		if d > 0 {
			m[k] = float64(d) / float64(time.Millisecond)
		}
	}
	add("ttft", s.TTFT)
	add("tpot", s.TPOT)
	add("itl", s.ITL)
	add("e2e", s.E2E)
	if len(m) == 0 {
		return nil
	}
	return m
}

// String formats s as ParseSLO reads it.
func (s SLO) String() string {
	var parts []string
	for k, v := range s.Millis() {
		parts = append(parts, fmt.Sprintf("%s=%s", k, time.Duration(v*float64(time.Millisecond))))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
