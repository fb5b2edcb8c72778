package compare

import (
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"testing"
)

func TestFormatsGolden(t *testing.T) {
	m := baseModel
	m.Secs = 60
	b := m.result(7, "v1")
	m.P99Factor = 1.1
	n := m.result(8, "v2")
	rep, err := Compare(Sides{Base: []Input{{"base.json", b}}, New: []Input{{"new.json", n}}}, Config{Seed: 3, Resamples: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Formats {
		var buf bytes.Buffer
		if err := Write(&buf, rep, f); err != nil {
			t.Fatal(err)
		}
		ext := map[string]string{"table": "txt", "markdown": "md", "json": "json"}[f]
		golden.Check(t, "compare."+ext, buf.Bytes())
	}
	if err := Write(&bytes.Buffer{}, rep, "xml"); err == nil {
		t.Error("format xml accepted")
	}
}
