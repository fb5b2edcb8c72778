//go:build integration

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole ramp")
	}
	dir := t.TempDir()
	code, stdout, stderr := cli(t, context.Background(), "quickstart", "--stage", "1s", "--dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	r := readResult(t, filepath.Join(dir, "quickstart.json"))
	if len(r.Scenarios) != 6 || r.Config.Experiment != filepath.Join(dir, "quickstart.yaml") {
		t.Fatalf("%d scenarios from %q, want the 6 stages of the bundled experiment", len(r.Scenarios), r.Config.Experiment)
	}
	for _, sc := range r.Scenarios {
		if sc.Requests.Succeeded == 0 || sc.Metrics["ttft_ms"].Count == 0 {
			t.Errorf("stage %s measured nothing: %+v", sc.Name, sc.Requests)
		}
	}
	if !strings.Contains(stdout, "knee:") || !strings.Contains(stdout, "rate-24") {
		t.Errorf("no sweep table:\n%s", stdout)
	}
	html, err := os.ReadFile(filepath.Join(dir, "quickstart.html"))
	if err != nil || !bytes.Contains(html, []byte("rate-24")) || !bytes.Contains(html, []byte("echarts")) {
		t.Errorf("no HTML report with the stages (%v)", err)
	}
}
