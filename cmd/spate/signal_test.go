package main

import (
	"bufio"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/longtest"
	"github.com/spate-dev/spate/llmtest"
)

// binary is a program the tests build once.
type binary struct {
	once sync.Once
	path string
	err  error
}

// build builds pkg (once) without the race detector and returns the
// program's path.
func (b *binary) build(t *testing.T, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds " + pkg)
	}
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "spate-bin")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, filepath.Base(pkg))
		if out, err := exec.Command("go", "build", "-o", b.path, pkg).CombinedOutput(); err != nil {
			b.err = errors.New(string(out))
		}
	})
	if b.err != nil {
		t.Fatalf("go build %s: %v", pkg, b.err)
	}
	return b.path
}

var spateBin, hangBin binary

// spateBinary builds the spate binary once for the tests that signal it.
func spateBinary(t *testing.T) string {
	t.Helper()
	return spateBin.build(t, "github.com/spate-dev/spate/cmd/spate")
}

// cpuOf is the CPU time (user and system) process pid has used so far,
// read from /proc (false where there is none).
func cpuOf(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, false
	}
	var ticks int64
	for _, s := range f[11:13] { // utime, stime: fields 14 and 15, in clock ticks
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100, true // USER_HZ is 100 on Linux
}

// watchRunQueue samples, until process pid ends, the time its threads
// have spent runnable but waiting for a processor (/proc's schedstat),
// and returns a function that stops it and gives the time since the call
// (0 where /proc has no schedstat).
func watchRunQueue(pid int) func() time.Duration {
	read := func() (time.Duration, bool) {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return 0, false
		}
		var sum time.Duration
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
			if f := strings.Fields(string(b)); err == nil && len(f) >= 2 {
				n, _ := strconv.ParseInt(f[1], 10, 64) // nanoseconds waiting on a run queue
				sum += time.Duration(n)
			}
		}
		return sum, true
	}
	first, _ := read()
	var last atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			if w, ok := read(); ok && w >= first {
				last.Store(int64(w - first))
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() time.Duration {
		close(stop)
		<-done
		return time.Duration(last.Load())
	}
}

// waitExit waits up to limit for cmd to exit and returns its exit code and
// how long it took from since.
func waitExit(t *testing.T, cmd *exec.Cmd, since time.Time, limit time.Duration) (int, time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		took := time.Since(since)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), took
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, took
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("spate did not exit within %v", limit)
	}
	return 0, 0
}

// TestSIGINTWritesPartialResult runs the real binary and interrupts it the
// way a user's Ctrl-C does.
func TestSIGINTWritesPartialResult(t *testing.T) {
	longtest.Skip(t)
	bin := spateBinary(t)
	dir := t.TempDir()
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
	if code, _ := waitExit(t, cmd, time.Now(), 10*time.Second); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	r := readResult(t, out)
	if !r.Interrupted || r.Scenarios[0].Requests.Succeeded < 1 || r.Verdict != "error" {
		t.Fatalf("interrupted %v verdict %q requests %+v", r.Interrupted, r.Verdict, r.Scenarios[0].Requests)
	}
}

// hangServer lists a model and never answers a completion, counting the
// completions it holds open (llmtest.Hang).
func hangServer(t *testing.T) (url string, open *atomic.Int64) {
	t.Helper()
	open = &atomic.Int64{}
	srv := httptest.NewServer(llmtest.Hang(open))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv.URL + "/v1", open
}

// hangServerProcess is hangServer run as a process of its own
// (llmtest/hangserver, built without the race detector), holding at most
// max connections open at once: tearing down thousands of connections
// then takes neither this process's processors nor its scheduler, which
// times spate's exit (a race-built server here, handling as many ends,
// held the goroutine that waits for spate's exit for seconds on a busy
// machine). open follows the count the server prints.
func hangServerProcess(t *testing.T, max int) (url string, open *atomic.Int64) {
	t.Helper()
	hangPath := hangBin.build(t, "github.com/spate-dev/spate/llmtest/hangserver")
	cmd := exec.Command(hangPath, "-max", strconv.Itoa(max))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("hangserver printed no URL: %v", lines.Err())
	}
	url = lines.Text()
	open = &atomic.Int64{}
	counted := make(chan struct{})
	go func() {
		defer close(counted)
		for lines.Scan() {
			if n, err := strconv.ParseInt(lines.Text(), 10, 64); err == nil {
				open.Store(n)
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-counted
		cmd.Wait()
	})
	return url, open
}

// TestInterruptsWithThousandsInFlight: with thousands of requests in
// flight to a server that never answers, the first SIGINT (or SIGTERM)
// makes spate exit within the interrupted drain (2 s) plus 2 s (plus what
// a busy machine kept its threads waiting for a processor, or made its
// teardown cost in CPU over 1 s), with a partial result; a second SIGINT
// right after the first makes it exit at once, still writing what it has. The requests in flight are as many
// as the open-file limit lets both processes hold, up to 20,000 (the
// issue saw 17k take 4.8 s to exit); 2,000 at the least.
func TestInterruptsWithThousandsInFlight(t *testing.T) {
	longtest.Skip(t)
	bin := spateBinary(t)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	want := int64(min(20_000, max(2_000, int64(lim.Cur)-2_000)))
	if testing.Short() {
		want = 2_000
	}
	for _, tc := range []struct {
		sig   syscall.Signal
		twice bool
	}{{syscall.SIGINT, false}, {syscall.SIGTERM, false}, {syscall.SIGINT, true}} {
		twice := tc.twice
		target, open := hangServerProcess(t, int(want)+200)
		out := filepath.Join(t.TempDir(), "r.json")
		cmd := exec.Command(bin, "run", "--target", target, "--model", "x", "--rate", "4000", "--arrival", "constant",
			"--duration", "1m", "--out", out, "--quiet")
		// The second signal goes once spate has said it took the first,
		// as a user presses Ctrl-C again: two SIGINTs that arrive before
		// the first is taken are one (signals of a kind do not queue).
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		stopping := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(stderr)
			once := false
			for sc.Scan() {
				if !once && strings.HasPrefix(sc.Text(), "spate: stopping:") {
					once = true
					close(stopping)
				}
			}
		}()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for open.Load() < want && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		inFlight := open.Load()
		t0 := time.Now()
		if err := cmd.Process.Signal(tc.sig); err != nil {
			t.Fatal(err)
		}
		limit := 2*time.Second + 2*time.Second // the interrupted drain, plus 2 s
		if twice {
			select {
			case <-stopping:
			case <-time.After(10 * time.Second):
				t.Fatal("spate did not say it took the first signal within 10 s")
			}
			t0 = time.Now()
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			limit = 2 * time.Second
		}
		cpu0, ok := cpuOf(cmd.Process.Pid)
		if !ok {
			t.Fatalf("cannot read /proc/%d/stat: the CPU spate uses after the signal is not known", cmd.Process.Pid)
		}
		queued := watchRunQueue(cmd.Process.Pid)
		code, took := waitExit(t, cmd, t0, time.Minute)
		spent := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime() - cpu0
		waited := queued()
		t.Logf("%v, twice %v: %d in flight, exit %d after %v (after the signal spate used %v of CPU and its threads waited %v for a processor)",
			tc.sig, twice, inFlight, code, took, spent, waited)
		// On a busy machine (the test's server tears down as many
		// connections on the same processors) spate may pass the limit
		// for want of a processor, which is no fault of its own: the time
		// over the limit is excused up to what its threads spent runnable
		// but waiting, and up to the CPU it used beyond 1 s: the 2 s
		// after the drain are for a teardown of about that much work,
		// and the same work costs more CPU on a busy machine (18,000
		// requests: 1.1-1.8 s on a quiet 2-core machine beside a
		// race-built server, closing the sockets most of it; 2.3 s at load
		// 7-8, where spate exited after 5.0 s having waited 0.75 s). An
		// idle wait, a drain too long, is not excused. Its work after
		// the signal is bounded whatever the machine does: 5 s of CPU
		// for the teardown of up to 20,000 requests.
		slow := max(spent-time.Second, 0)
		if code != 1 || took-limit > waited+slow || spent > 5*time.Second {
			t.Errorf("exit %d after %v (%v of CPU, %v waiting for a processor), want 1 within %v", code, took, spent, waited, limit)
		}
		r := readResult(t, out)
		rq := r.Scenarios[0].Requests
		if inFlight < want {
			t.Errorf("%d in flight after a minute, want %d", inFlight, want)
		}
		if !r.Interrupted || int64(rq.Cancelled) < want/2 || rq.Succeeded != 0 {
			t.Errorf("interrupted %v, requests %+v: want a partial result with the requests in flight cancelled", r.Interrupted, rq)
		}
	}
}
