//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/longtest"
	"github.com/spate-dev/spate/llmtest"
)

// emfileHelperEnv, when set, makes TestEMFILEHelper the spate process of
// TestRunOutOfFileDescriptors: it lowers its own RLIMIT_NOFILE and runs the
// command line the variable holds (JSON).
const emfileHelperEnv = "SPATE_TEST_EMFILE_ARGS"

// TestEMFILEHelper is not a test: it is the child process of
// TestRunOutOfFileDescriptors (skipped otherwise).
func TestEMFILEHelper(t *testing.T) {
	env := os.Getenv(emfileHelperEnv)
	if env == "" {
		t.Skip("the child process of TestRunOutOfFileDescriptors")
	}
	var args []string
	if err := json.Unmarshal([]byte(env), &args); err != nil {
		t.Fatal(err)
	}
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		t.Fatal(err)
	}
	l.Cur = 200
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		t.Fatal(err)
	}
	os.Exit(execute(context.Background(), args, os.Stdout, os.Stderr))
}

// TestRunOutOfFileDescriptors runs spate with 200 file descriptors against
// a server that answers after a second, at a rate that holds 300 requests
// in flight: the requests that found no descriptor are the generator's
// failures (local_file_limit), not the target's connect errors, and the
// stage is invalid with that cause (exit 4).
func TestRunOutOfFileDescriptors(t *testing.T) {
	longtest.Skip(t)
	srv := llmtest.NewServer(llmtest.Config{TTFT: time.Second, ITL: time.Millisecond, Tokens: 4})
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "r.json")
	args, _ := json.Marshal([]string{"run", "--target", srv.BaseURL(), "--model", "x", "--rate", "300", "--arrival", "constant",
		"--duration", "2s", "--drain-timeout", "3s", "--out", out, "--quiet"})
	cmd := exec.Command(os.Args[0], "-test.run=^TestEMFILEHelper$")
	cmd.Env = append(os.Environ(), emfileHelperEnv+"="+string(args))
	b, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("exit %d: %s", code, b)
	r := readResult(t, out)
	sc := r.Scenarios[0]
	errs, _ := json.Marshal(sc.Requests.Errors)
	t.Logf("requests %+v, errors %s, load valid %v cause %q: %s", sc.Requests, errs, sc.Load.Valid, sc.Load.InvalidCause, sc.Load.InvalidReason)
	if code != exitInvalid || sc.Load.Valid || sc.Load.InvalidCause != "generator_file_limit" || !strings.Contains(sc.Load.InvalidReason, "ulimit -n") {
		t.Errorf("exit %d, load valid %v, cause %q: want 4, invalid, generator_file_limit", code, sc.Load.Valid, sc.Load.InvalidCause)
	}
	if sc.Requests.Errors["local_file_limit"] == 0 || strings.Contains(string(errs), `"connect`) {
		t.Errorf("errors %s: want local_file_limit and no connect (or connect_reset) errors", errs)
	}
}
