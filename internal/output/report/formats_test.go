package report

import "testing"

func TestReportFormatFromExtension(t *testing.T) {
	for _, c := range []struct {
		out    string
		inputs []string
		want   string
	}{
		{"r.html", []string{"a.json"}, "html"},
		{"", []string{"a.json"}, "html"},
		{"r.MD", []string{"a.json"}, "markdown"},
		{"junit.xml", []string{"a.json"}, "junit"},
		{"s.csv", []string{"a.json"}, "csv"},
		{"s.csv", []string{"a.jsonl", "b.jsonl"}, "records-csv"},
	} {
		got, err := Format("", c.out, c.inputs)
		if err != nil || got != c.want {
			t.Errorf("-o %q %v: %q %v, want %q", c.out, c.inputs, got, err, c.want)
		}
	}
}
