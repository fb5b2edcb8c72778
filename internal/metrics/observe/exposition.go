package observe

import (
	"fmt"
	"io"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families are the metric families of one scrape (of one or more
// endpoints), by name.
type Families map[string]*dto.MetricFamily

// ParseText parses Prometheus text exposition (format 0.0.4, which
// OpenMetrics text mostly is), accepting UTF-8 and colon names such as
// vLLM's `vllm:num_requests_running`.
func ParseText(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing Prometheus text exposition: %w", err)
	}
	return Families(fams), nil
}

// merge adds other's families to f: the samples of a family scraped from
// several endpoints are kept side by side.
func (f Families) merge(other Families) {
	for name, mf := range other {
		have, ok := f[name]
		if !ok {
			f[name] = mf
			continue
		}
		if have.GetType() != mf.GetType() {
			continue // a clash of types between endpoints: keep the first
		}
		cp := &dto.MetricFamily{Name: have.Name, Help: have.Help, Type: have.Type}
		cp.Metric = append(append(cp.Metric, have.Metric...), mf.Metric...)
		f[name] = cp
	}
}

// signature identifies one series of a family by its labels, plus the
// index of the endpoint it came from.
func signature(m *dto.Metric) string {
	ls := make([]string, 0, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		ls = append(ls, lp.GetName()+"="+lp.GetValue())
	}
	sort.Strings(ls)
	return strings.Join(ls, "\xff")
}

// scalar is the value of a gauge, counter or untyped sample.
func scalar(m *dto.Metric) (float64, bool) {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}
