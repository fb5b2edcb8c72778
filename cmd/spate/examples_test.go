package main

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/sim"
)

// TestExamplesRunAgainstSimulator runs every example experiment, shortened
// by flags, against the built-in simulator.
func TestExamplesRunAgainstSimulator(t *testing.T) {
	srv, err := sim.New(sim.Deterministic(20*time.Millisecond, 2*time.Millisecond, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); sim.Serve(ctx, ln, srv) }()
	defer func() { cancel(); <-done }()
	target := "http://" + ln.Addr().String() + "/v1"

	files, _ := filepath.Glob("../../examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			e, err := experiment.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "r.json")
			code, stdout, stderr := spate(t, context.Background(), "run", f, "--target", target,
				"--duration", "1s", "--requests", "4", "--warmup", "0s", "--out", out, "--quiet")
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			r := readResult(t, out)
			if len(r.Scenarios) != len(e.Stages) {
				t.Fatalf("%d scenarios, want %d", len(r.Scenarios), len(e.Stages))
			}
			for _, sc := range r.Scenarios {
				if sc.Requests.Succeeded == 0 {
					t.Errorf("stage %s: nothing succeeded: %+v", sc.Name, sc.Requests)
				}
			}
		})
	}
}
