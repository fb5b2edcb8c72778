//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fifo makes a FIFO nobody writes to: opening it for reading blocks until
// a writer comes, which none does.
func fifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.json") // .json: --tokenizer takes it as a file
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	return p
}

// fifoArgs are the commands that read a file from outside, each given a
// FIFO that never delivers (target: a server that lists a model and never
// answers).
func fifoArgs(p, target, out string) []struct {
	name string
	args []string
} {
	run := []string{"run", "--target", target, "--model", "x", "--rate", "1", "--duration", "1m", "--out", out, "--quiet"}
	with := func(a ...string) []string { return append(append([]string{}, run...), a...) }
	return []struct {
		name string
		args []string
	}{
		{"spate run FIFO", with(p)},
		{"--dataset FIFO", with("--dataset", p)},
		{"--workload FIFO", with("--workload", p)},
		{"--workflow FIFO", with("--workflow", p)},
		{"--probes FIFO", with("--probes", p)},
		{"--chaos-faults FIFO", with("--chaos-faults", p)},
		{"spate chaos proxy --faults FIFO", []string{"chaos", "proxy", "--upstream", target, "--faults", p}},
		{"spate merge FIFO", []string{"merge", p, "-o", out}},
		{"spate report FIFO", []string{"report", p, "-o", out + ".html"}},
		{"spate compare FIFO", []string{"compare", p, p}},
		{"spate validate FIFO", []string{"validate", p}},
		{"--input-tokens empirical:FIFO", with("--input-tokens", "empirical:"+p)},
		{"--tokenizer FIFO", with("--tokenizer", p)},
		{"spate vector drift --baseline FIFO", []string{"vector", "drift", "--target", target, "--model", "x", "--baseline", p}},
	}
}

// TestFIFOInputsObeyCancel gives every reader of outside files a FIFO
// with no writer and cancels the command's context (what the first
// Ctrl-C or SIGTERM does): each command returns within the interrupted
// drain (2 s) plus 2 s, asserted as 10 s on a shared machine.
func TestFIFOInputsObeyCancel(t *testing.T) {
	target, _ := hangServer(t)
	for _, tc := range fifoArgs("", "", "") {
		t.Run(tc.name, func(t *testing.T) {
			p, out := fifo(t), filepath.Join(t.TempDir(), "r.json")
			var args []string
			for _, c := range fifoArgs(p, target, out) {
				if c.name == tc.name {
					args = c.args
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type exit struct {
				code           int
				stdout, stderr string
			}
			done := make(chan exit, 1)
			go func() {
				code, stdout, stderr := cli(t, ctx, args...)
				done <- exit{code, stdout, stderr}
			}()
			time.Sleep(300 * time.Millisecond) // into the FIFO's open
			t0 := time.Now()
			cancel()
			select {
			case e := <-done:
				t.Logf("exit %d %v after cancel: %s", e.code, time.Since(t0), e.stderr)
				if e.code != exitError {
					t.Errorf("exit %d, want 1 (interrupted)", e.code)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("still reading the FIFO 10 s after cancel")
			}
		})
	}
}

// TestFIFOInputsObeySignals runs the binary on a FIFO with no writer, as
// Kubernetes (SIGTERM) and a user (SIGINT) stop it: it exits within the
// interrupted drain plus 2 s (asserted as 10 s).
func TestFIFOInputsObeySignals(t *testing.T) {
	bin := spateBinary(t)
	target, _ := hangServer(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		for _, name := range []string{"spate run FIFO", "--dataset FIFO", "spate merge FIFO", "--dataset <(slow producer)"} {
			t.Run(sig.String()+"/"+name, func(t *testing.T) {
				p, out := fifo(t), filepath.Join(t.TempDir(), "r.json")
				var args []string
				for _, c := range fifoArgs(p, target, out) {
					if c.name == name {
						args = c.args
					}
				}
				var extra []*os.File
				if name == "--dataset <(slow producer)" {
					// What a shell's process substitution gives: a pipe
					// at /dev/fd/N whose producer wrote a line and then
					// stalls, so the read (not the open) waits.
					r, w, err := os.Pipe()
					if err != nil {
						t.Fatal(err)
					}
					defer w.Close()
					defer r.Close()
					w.WriteString(`{"prompt": "hi"}` + "\n")
					extra = []*os.File{r}
					for _, c := range fifoArgs("/dev/fd/3", target, out) {
						if c.name == "--dataset FIFO" {
							args = c.args
						}
					}
				}
				cmd := exec.Command(bin, args...)
				cmd.ExtraFiles = extra
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				// Into the FIFO's open (or the pipe's read): a fixed
				// 500 ms was too short for a loaded machine, where the
				// signal came before spate watched for it (killed by
				// it, exit -1, three suites at once).
				asleep(t, cmd.Process.Pid)
				t0 := time.Now()
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				code, took := waitExit(t, cmd, t0, 10*time.Second)
				t.Logf("exit %d %v after %v", code, took, sig)
				if code != exitError {
					t.Errorf("exit %d, want 1 (interrupted)", code)
				}
			})
		}
	}
}

// asleep waits (up to 10 s) until every thread of process pid sleeps and
// together they used under 1 ms of CPU over the last 100 ms: it waits for
// its input, long past starting up (where a signal could come before
// spate watches for it). Where /proc has no schedstat, it waits 500 ms.
func asleep(t *testing.T, pid int) {
	t.Helper()
	// sample is the threads' CPU time (schedstat's first field) and
	// whether every one of them sleeps (state S).
	sample := func() (time.Duration, bool, bool) {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return 0, false, false
		}
		var cpu time.Duration
		sleeping := true
		for _, task := range tasks {
			dir := fmt.Sprintf("/proc/%d/task/%s/", pid, task.Name())
			st, err1 := os.ReadFile(dir + "stat")
			ss, err2 := os.ReadFile(dir + "schedstat")
			f := strings.Fields(string(ss))
			i := strings.LastIndexByte(string(st), ')')
			if err1 != nil || err2 != nil || len(f) < 1 || i < 0 || i+2 >= len(st) {
				return 0, false, false
			}
			n, _ := strconv.ParseInt(f[0], 10, 64)
			cpu += time.Duration(n)
			sleeping = sleeping && st[i+2] == 'S'
		}
		return cpu, sleeping, true
	}
	prev, _, ok := sample()
	if !ok {
		time.Sleep(500 * time.Millisecond)
		return
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		time.Sleep(100 * time.Millisecond)
		cpu, sleeping, ok := sample()
		if !ok {
			t.Fatalf("spate (pid %d) ended before it was signalled", pid)
		}
		if sleeping && cpu-prev < time.Millisecond {
			return
		}
		prev = cpu
	}
	t.Fatalf("spate (pid %d) still busy 10 s after it started: not waiting for its input", pid)
}
