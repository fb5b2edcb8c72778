package observe

import (
	"fmt"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Selector picks the samples of one metric family whose labels include all
// of Labels (exact matches).
type Selector struct {
	Name   string
	Labels map[string]string
}

// ParseSelector parses `name` or `name{label="value",...}` (names as in the
// Prometheus text format, colons allowed, or quoted UTF-8 names), with the
// Prometheus text parser itself: the selector is read as one sample line.
func ParseSelector(s string) (Selector, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Selector{}, fmt.Errorf("empty metric selector: want name or name{label=\"value\"}")
	}
	if strings.ContainsAny(s, "\n\r#") {
		return Selector{}, fmt.Errorf("metric selector %q: want name or name{label=\"value\"} on one line", s)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(s + " 0\n"))
	if err != nil {
		return Selector{}, fmt.Errorf("metric selector %q: want name or name{label=\"value\",...} with exact matches: %w", s, err)
	}
	if len(fams) != 1 {
		return Selector{}, fmt.Errorf("metric selector %q: want one metric name", s)
	}
	var sel Selector
	for name, mf := range fams {
		sel.Name = name
		for _, lp := range mf.GetMetric()[0].GetLabel() {
			if sel.Labels == nil {
				sel.Labels = map[string]string{}
			}
			sel.Labels[lp.GetName()] = lp.GetValue()
		}
	}
	return sel, nil
}

// MustSelector is ParseSelector for selectors written in the code.
func MustSelector(s string) Selector {
	sel, err := ParseSelector(s)
	if err != nil {
		panic(err)
	}
	return sel
}

// String writes the selector back as name{label="value",...}, labels sorted.
func (s Selector) String() string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	legacy := model.IsValidLegacyMetricName(s.Name)
	if legacy {
		b.WriteString(s.Name)
		if len(keys) == 0 {
			return b.String()
		}
		b.WriteByte('{')
	} else {
		// A UTF-8 name goes quoted inside the braces.
		b.WriteString("{" + quote(s.Name))
		if len(keys) > 0 {
			b.WriteByte(',')
		}
	}
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		if model.LegacyValidation.IsValidLabelName(k) {
			b.WriteString(k)
		} else {
			b.WriteString(quote(k))
		}
		b.WriteString("=" + quote(s.Labels[k]))
	}
	b.WriteByte('}')
	return b.String()
}

// matches reports whether m carries every label of the selector.
func (s Selector) matches(m *dto.Metric) bool {
	for k, v := range s.Labels {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k {
				found = lp.GetValue() == v
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// escape escapes as the Prometheus text format does.
var escape = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func quote(s string) string { return `"` + escape.Replace(s) + `"` }
