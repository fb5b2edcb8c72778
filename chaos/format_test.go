package chaos

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestWriteSummaryGolden(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ss, ws := plantedStage(t0)
	c := Figures(ss, ws, FigureOptions{Start: t0, End: t0.Add(5 * time.Second), RecoveryBin: 500 * time.Millisecond,
		Injected: map[string]int64{"blackhole": 20, "latency": 50}, Failing: 20})
	var b bytes.Buffer
	if err := WriteSummary(&b, "chaos", c); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "summary.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("summary differs from %s (-update rewrites it):\n%s", golden, b.String())
	}
}
