package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/spate-dev/spate/llmtest"
)

// TestSIGINTWritesPartialResult runs the real binary and interrupts it the
// way a user's Ctrl-C does.
func TestSIGINTWritesPartialResult(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the spate binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "spate")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	srv := llmtest.NewServer(llmtest.Config{TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond, Tokens: 4})
	defer srv.Close()
	out := filepath.Join(dir, "r.json")
	cmd := exec.Command(bin, "run", "--target", srv.BaseURL(), "--model", "x", "--rate", "20",
		"--duration", "1m", "--out", out, "--quiet")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for srv.Requests() < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("exit: %v, want code 1", err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("spate did not stop within 10 s of SIGINT")
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("no partial result: %v", err)
	}
	r := readResult(t, out)
	if !r.Interrupted || r.Scenarios[0].Requests.Succeeded < 1 {
		t.Fatalf("interrupted %v requests %+v", r.Interrupted, r.Scenarios[0].Requests)
	}
}
