package plan

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/llmtest"
)

// TestOutputsCheckedBeforeLoad: an output path that cannot be written
// fails the run before any request is sent (--out naming a directory
// failed only after the whole load, losing the result and leaving
// <out>.tmp behind).
func TestOutputsCheckedBeforeLoad(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{Tokens: 2})
	defer srv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		set  func(o *experiment.Outputs)
		want string
	}{
		{"out is a directory", func(o *experiment.Outputs) { o.Result = dir }, "--out " + dir + " is a directory"},
		{"report is a directory", func(o *experiment.Outputs) { o.Report = dir }, "--report " + dir + " is a directory"},
		{"records under a file", func(o *experiment.Outputs) { o.Records = filepath.Join(file, "r.jsonl") }, "--records " + file},
		{"junit under a file", func(o *experiment.Outputs) { o.JUnit = filepath.Join(file, "j.xml") }, "--junit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := srv.Requests()
			x := &experiment.Experiment{
				Target: experiment.Target{URL: srv.BaseURL(), Model: "m"},
				Stages: []experiment.Stage{{Name: "a", Concurrency: 1, Requests: 2}},
			}
			tc.set(&x.Outputs)
			res, err := Execute(context.Background(), x, Env{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || res != nil {
				t.Fatalf("result %v, error %v; want no result and an error containing %q", res != nil, err, tc.want)
			}
			if n := srv.Requests() - before; n != 0 {
				t.Errorf("%d requests sent before the bad path was found", n)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
			if errors.Is(err, ErrInvalid) != strings.Contains(tc.name, "directory") {
				t.Errorf("a directory is a usage error (exit 2), a path that cannot be made an error (exit 1): %v", err)
			}
		})
	}
}

// TestDefaultsAgree: a stream that stalls is a timeout of its own before
// the drain runs out and cancels it (the idle default was 1 min against a
// 30 s drain: every stalled request ended "cancelled" and the run exited
// 0).
func TestDefaultsAgree(t *testing.T) {
	d := Defaults()
	if idle, drain := d.Target.IdleTimeout, d.Stages[0].DrainTimeout; idle <= 0 || idle >= drain {
		t.Fatalf("idle timeout %v, drain %v: want 0 < idle < drain", idle, drain)
	}
}
