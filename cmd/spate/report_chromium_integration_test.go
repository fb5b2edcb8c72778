//go:build integration

package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/output/htmlreport/headless"
	"github.com/spate-dev/spate/sim"
)

// startReportSim serves the simulator's small-gpu preset on loopback until
// the test ends.
func startReportSim(t *testing.T) string {
	t.Helper()
	cfg, err := sim.Preset("small-gpu")
	if err != nil {
		t.Fatal(err)
	}
	_, target := startSim(t, cfg)
	return target
}

// TestReportChromium renders the HTML report of a real run against the
// in-process simulator, opens it in headless Chromium with the network
// blocked, and checks that ECharts drew every chart and nothing logged an
// error.
func TestReportChromium(t *testing.T) {
	chromium, ok := headless.Find()
	if !ok {
		t.Skip(headless.SkipMessage)
	}
	dir := t.TempDir()
	exp := writeReportExperiment(t, dir, startReportSim(t))
	res, page := filepath.Join(dir, "r.json"), filepath.Join(dir, "report.html")
	code, stdout, stderr := cli(t, context.Background(), "run", exp, "--out", res, "--quiet",
		"--threshold", "p99(ttft) < 10s", "--lag-bound", "1s")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, _, stderr := cli(t, context.Background(), "report", res, "-o", page); code != 0 {
		t.Fatalf("report: exit %d %s", code, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	charts, problems, _, err := headless.Open(ctx, chromium, page, filepath.Join(dir, "profile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	// 4 latency metrics × (spectrum, CDF), 6 time-line charts, 2 sweep charts.
	if charts != 16 {
		t.Errorf("the page has %d charts, want 16", charts)
	}
}
