package htmlreport

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spate-dev/spate/result"
)

var update = flag.Bool("update", false, "rewrite golden files")

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
	path := filepath.Join("testdata", "page.golden.html")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./htmlreport -update to create it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("page differs from %s (run go test ./htmlreport -update and review the diff)", path)
	}
}
