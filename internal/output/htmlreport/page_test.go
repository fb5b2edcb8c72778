package htmlreport

import (
	"github.com/spate-dev/spate/internal/golden"

	"bytes"
	"testing"
	"time"

	"github.com/spate-dev/spate/result"
)

// TestPageGolden pins the page's markup, tables and chart data; ECharts
// itself is left out of the golden file (it is embedded verbatim, as
// TestRenderEscapesAndCarriesTheCharts checks).
func TestPageGolden(t *testing.T) {
	saved := echartsJS
	echartsJS = "/* ECharts " + EChartsVersion + " */"
	defer func() { echartsJS = saved }()
	var b bytes.Buffer
	if err := Render(&b, []*result.Result{sample(t)}, Options{Title: "golden", Generated: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "page.golden.html", b.Bytes())
}
