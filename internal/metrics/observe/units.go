package observe

import (
	"regexp"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// helpUnit finds a unit in a HELP text as dcgm-exporter writes it:
// "Total energy consumption since boot (in mJ)."
var helpUnit = regexp.MustCompile(`\(in ([A-Za-z%/]{1,8})\)`)

// rateUnit is the unit of a --scrape-metric counter's per-second rate:
// the counter's unit per second, from its HELP text's "(in X)" or, by
// Prometheus's naming conventions, its name's unit suffix (_seconds,
// _bytes, _joules, _tokens, before _total); energy per second is power
// (mJ/s = mW, J/s = W). A counter of things is "1/s".
func rateUnit(mf *dto.MetricFamily) string {
	unit := ""
	if m := helpUnit.FindStringSubmatch(mf.GetHelp()); m != nil {
		unit = m[1]
	} else {
		name := strings.TrimSuffix(mf.GetName(), "_total")
		for _, u := range []string{"seconds", "bytes", "joules", "tokens"} {
			if strings.HasSuffix(name, "_"+u) {
				unit = u
			}
		}
	}
	switch unit {
	case "":
		return "1/s"
	case "mJ":
		return "mW"
	case "J", "joules":
		return "W"
	case "seconds":
		return "s/s"
	}
	return unit + "/s"
}

// family is the first family in the scrapes with a sample the selector
// matches.
func family(scrapes []Scrape, sel Selector) *dto.MetricFamily {
	for _, sc := range scrapes {
		mf := sc.Families[sel.Name]
		if mf == nil {
			continue
		}
		for _, m := range mf.GetMetric() {
			if sel.matches(m) {
				return mf
			}
		}
	}
	return nil
}
