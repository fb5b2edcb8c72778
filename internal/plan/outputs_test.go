package plan

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/llmtest"
	"github.com/spate-dev/spate/result"
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

// TestOutputsNotRegular: a run whose --out is a link, a FIFO or a device
// writes through it and leaves it as it was (each was replaced by a
// regular file, the link's target and the FIFO's reader got nothing, and
// the run said "result written").
func TestOutputsNotRegular(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{Tokens: 2})
	defer srv.Close()
	for _, tc := range []struct {
		name string
		// make makes the path --out names, and returns what reads the
		// bytes written (nil: none to read) and the mode --out keeps.
		make func(t *testing.T, dir string) (out string, written func() []byte, mode fs.FileMode)
	}{
		{"link to another directory", func(t *testing.T, dir string) (string, func() []byte, fs.FileMode) {
			target := filepath.Join(t.TempDir(), "target.json")
			out := filepath.Join(dir, "r.json")
			if err := os.Symlink(target, out); err != nil {
				t.Fatal(err)
			}
			return out, func() []byte { b, _ := os.ReadFile(target); return b }, fs.ModeSymlink
		}},
		{"fifo", func(t *testing.T, dir string) (string, func() []byte, fs.FileMode) {
			out := filepath.Join(dir, "fifo")
			if err := syscall.Mkfifo(out, 0o644); err != nil {
				t.Skipf("no FIFO: %v", err)
			}
			got := make(chan []byte, 1)
			go func() {
				// Opening waits for the writer; had there never been
				// one, this would wait for ever, and the test fails on
				// the FIFO being gone before it waits for this.
				f, err := os.Open(out)
				if err != nil {
					got <- nil
					return
				}
				defer f.Close()
				b, _ := io.ReadAll(f)
				got <- b
			}()
			return out, func() []byte { return <-got }, fs.ModeNamedPipe
		}},
		{"device", func(t *testing.T, dir string) (string, func() []byte, fs.FileMode) {
			out := filepath.Join(dir, "null")
			if err := syscall.Mknod(out, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
				t.Skipf("cannot make a device (not root?): %v", err)
			}
			if f, err := os.OpenFile(out, os.O_WRONLY, 0); err != nil {
				t.Skipf("cannot open a device here (a nodev mount?): %v", err)
			} else {
				f.Close()
			}
			return out, nil, fs.ModeCharDevice
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out, written, mode := tc.make(t, dir)
			x := &experiment.Experiment{
				Target:  experiment.Target{URL: srv.BaseURL(), Model: "m"},
				Stages:  []experiment.Stage{{Name: "a", Concurrency: 1, Requests: 2}},
				Outputs: experiment.Outputs{Result: out},
			}
			if _, err := Execute(context.Background(), x, Env{}); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(out)
			if err != nil || fi.Mode()&mode == 0 {
				t.Fatalf("--out is now %v (%v), want it kept as %v", fi.Mode(), err, mode)
			}
			if written == nil {
				return
			}
			var r result.Result
			if err := json.Unmarshal(written(), &r); err != nil || len(r.Scenarios) != 1 {
				t.Fatalf("what was written: %v", err)
			}
		})
	}
}
