package quickstart

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/result"
	"github.com/spate-dev/spate/sim"
)

// The quickstart writes its experiment, result and report, and prints the
// sweep table with one row a stage. Stages of 200 ms keep it short; the
// whole ramp runs in cmd/spate's integration test and the docs test.
func TestRunWritesEverything(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spate-results")
	cfg := sim.Deterministic(5*time.Millisecond, time.Millisecond, 4)
	var out, errw bytes.Buffer
	err := Run(context.Background(), &out, &errw, Config{Dir: dir, Preset: "test", Sim: cfg, Stage: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errw.String())
	}
	for _, f := range []string{"quickstart.yaml", "quickstart.json", "quickstart.html"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	res, err := result.Read(filepath.Join(dir, "quickstart.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Scenarios) != 6 || res.Provenance.SUTVersion != "spate-sim/test" {
		t.Errorf("%d scenarios, SUT %q: want the 6 stages of the ramp against spate-sim/test", len(res.Scenarios), res.Provenance.SUTVersion)
	}
	for _, want := range []string{"spate quickstart: simulator (preset test)", "result written to " + filepath.Join(dir, "quickstart.json")} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
