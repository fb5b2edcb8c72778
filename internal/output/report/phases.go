package report

import (
	"fmt"
	"strings"

	"github.com/spate-dev/spate/result"
)

// phasesLine is the console's line of the HTTP phases (see PhasesText);
// "" when none was measured.
func phasesLine(p *result.HTTPPhases) string {
	if t := PhasesText(p); t != "" {
		return "http       " + t + "\n"
	}
	return ""
}

// PhasesText says the HTTP phases (docs/figures.md, "HTTP phases") in one
// line: each phase's p50/p99 in ms and, in brackets, the requests it is
// over (a reused connection has no DNS, connect or TLS phase); "" when
// none was measured.
func PhasesText(p *result.HTTPPhases) string {
	if p == nil {
		return ""
	}
	var parts []string
	for _, ph := range []struct {
		name string
		d    *result.Dist
	}{{"dns", p.DNSMS}, {"connect", p.ConnectMS}, {"tls", p.TLSMS}, {"write", p.WriteMS}, {"first byte", p.FirstByteMS}} {
		if ph.d == nil || ph.d.Count == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s/%s (%d)", ph.name, phaseMS(ph.d.P50), phaseMS(ph.d.P99), ph.d.Count))
	}
	if len(parts) == 0 {
		return ""
	}
	return "p50/p99 ms (requests): " + strings.Join(parts, " · ")
}

// phaseMS prints a phase's milliseconds: two decimals under 10 ms (a
// loopback connect is tens of microseconds), one above.
func phaseMS(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
