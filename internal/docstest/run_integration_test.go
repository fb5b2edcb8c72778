//go:build integration

package docstest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// simPort is the port the docs write the simulator at.
const simPort = "8000"

var loopbackRE = regexp.MustCompile(`\b(127\.0\.0\.1|localhost):(\d{2,5})\b`)

// fingerprintRE finds a result's fingerprint as the console prints it: a
// digest of the model, the system's version and the workload, the same on
// every machine, so the one an output block shows must be what its
// commands print.
var fingerprintRE = regexp.MustCompile(`fingerprint [0-9a-f]{16}\b`)

// directives are the clauses of a block's <!-- docs-test: ... --> comment.
type directives struct {
	skip    string
	needs   []string
	sim     string
	hasSim  bool
	exit    int
	timeout time.Duration
}

func parseDirectives(s string) (directives, error) {
	d := directives{timeout: 2 * time.Minute}
	clauses := strings.Split(s, ";")
	for i, clause := range clauses {
		clause = strings.TrimSpace(clause)
		if clause == "" {
			continue
		}
		key, arg, _ := strings.Cut(clause, " ")
		arg = strings.TrimSpace(arg)
		switch key {
		case "skip": // the reason is the rest, semicolons and all
			d.skip = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.Join(clauses[i:], ";")), "skip"))
			if d.skip == "" {
				d.skip = "(no reason given)"
			}
			return d, nil
		case "needs":
			d.needs = append(d.needs, strings.Fields(arg)...)
		case "sim":
			d.sim, d.hasSim = arg, true
		case "exit":
			n, err := strconv.Atoi(arg)
			if err != nil {
				return d, fmt.Errorf("exit %q: %v", arg, err)
			}
			d.exit = n
		case "timeout":
			t, err := time.ParseDuration(arg)
			if err != nil {
				return d, fmt.Errorf("timeout %q: %v", arg, err)
			}
			d.timeout = t
		default:
			return d, fmt.Errorf("unknown docs-test clause %q (skip, needs, sim, exit, timeout)", key)
		}
	}
	return d, nil
}

// freePorts returns n distinct free loopback ports.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var ls []net.Listener
	var ports []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// portMap moves every loopback port of a text to its free port.
type portMap map[string]string

func (m portMap) rewrite(s string) string {
	return loopbackRE.ReplaceAllStringFunc(s, func(hp string) string {
		sub := loopbackRE.FindStringSubmatch(hp)
		if p, ok := m[sub[2]]; ok {
			return sub[1] + ":" + p
		}
		return hp
	})
}

// copyExamples copies the repository's examples/ into dir with their
// loopback ports moved.
func copyExamples(t *testing.T, root, dir string, ports portMap) {
	t.Helper()
	src := filepath.Join(root, "examples")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		dst := filepath.Join(dir, "examples", rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, []byte(ports.rewrite(string(b))), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// skippedPrograms are programs whose lines the docs show but the test does
// not run: builds and the test suite itself, clusters, benchmarks.
func skippedLine(words []string) bool {
	w := program(words)
	if len(w) == 0 {
		return false
	}
	switch {
	case w[0] == "go" && !(len(w) >= 3 && w[1] == "run" && w[2] == "./cmd/spate"):
		return true
	case w[0] == "kubectl", strings.HasPrefix(w[0], "bench/"):
		return true
	}
	return false
}

// serverAddr says whether a spate command line starts a server (spate sim,
// spate chaos proxy) and, if so, the flag and address it listens on.
func serverAddr(args []string) (flag, addr string, ok bool) {
	if len(args) >= 1 && args[0] == "sim" {
		flag, addr = "--addr", "127.0.0.1:8000"
	} else if len(args) >= 2 && args[0] == "chaos" && args[1] == "proxy" {
		flag, addr = "--listen", "127.0.0.1:9000"
	} else {
		return "", "", false
	}
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return flag, args[i+1], true
		}
		if v, found := strings.CutPrefix(a, flag+"="); found {
			return flag, v, true
		}
	}
	return flag, "", true
}

// script turns a block into the bash script the test runs, and says whether
// the block starts its own server on the simulator's address.
func script(b block, ports portMap) (string, bool) {
	var out strings.Builder
	out.WriteString(`set -e
__docs_wait() {
  local h=${1%:*} p=${1##*:}
  for _ in $(seq 400); do
    (: > "/dev/tcp/$h/$p") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "docs test: nothing listens on $1" >&2
  return 1
}
trap '__rc=$?; set +e; __jobs=$(jobs -p); [ -n "$__jobs" ] && kill $__jobs 2>/dev/null; wait 2>/dev/null; exit $__rc' EXIT
`)
	ownSim := false
	// Logical lines: continuation lines joined.
	var logical []string
	var cur strings.Builder
	for _, l := range b.lines {
		if strings.HasSuffix(l, `\`) {
			cur.WriteString(strings.TrimSuffix(l, `\`))
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(l)
		logical = append(logical, cur.String())
		cur.Reset()
	}
	if cur.Len() > 0 {
		logical = append(logical, cur.String())
	}
	for _, l := range logical {
		l = strings.ReplaceAll(l, "go run ./cmd/spate", "spate")
		cmds := parseShell(l)
		if len(cmds) > 0 && skippedLine(cmds[0].words) {
			fmt.Fprintf(&out, ": docs test does not run: %q\n", l)
			continue
		}
		if len(cmds) == 1 {
			if args, ok := spateArgs(cmds[0].words); ok {
				if flag, addr, ok := serverAddr(args); ok {
					l = strings.TrimSpace(l)
					if i := strings.Index(l, " #"); i >= 0 {
						l = strings.TrimSpace(l[:i])
					}
					l = strings.TrimSpace(strings.TrimSuffix(l, "&"))
					if addr == "" {
						addr = map[string]string{"--addr": "127.0.0.1:8000", "--listen": "127.0.0.1:9000"}[flag]
						l += " " + flag + " " + addr
					}
					if _, port, _ := net.SplitHostPort(addr); port == simPort {
						ownSim = true
					}
					fmt.Fprintf(&out, "%s &\n__docs_wait %s\n", ports.rewrite(l), ports.rewrite(addr))
					continue
				}
			}
		}
		out.WriteString(ports.rewrite(l))
		out.WriteString("\n")
	}
	return out.String(), ownSim
}

// simAt reads a sim clause's leading "--addr 127.0.0.1:PORT": the port
// the block's simulator listens on (moved like every loopback port) and
// the clause's other flags.
func simAt(args string) (port, rest string, ok bool) {
	f := strings.Fields(args)
	if len(f) < 2 || f[0] != "--addr" || !strings.HasPrefix(f[1], "127.0.0.1:") {
		return "", args, false
	}
	return strings.TrimPrefix(f[1], "127.0.0.1:"), strings.Join(f[2:], " "), true
}

// startSim starts spate sim on addr for one block and returns its stop.
func startSim(t *testing.T, bin, addr, args string) func() {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"sim", "--addr", addr}, strings.Fields(args)...)...)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return stop
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("spate sim %s did not listen on %s: %s", args, addr, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDocCommandsRun runs every sh block of README.md and docs/*.md against
// spate sim on loopback (see the package comment for the conventions).
func TestDocCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every documented command: not in -short")
	}
	root := repoRoot(t)
	bin := spateBinary(t)
	path := filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	only := os.Getenv("DOCSTEST_FILE") // e.g. docs/run.md: run one file's blocks
	for _, name := range docFiles(t, root) {
		if only != "" && name != only {
			continue
		}
		f := readMarkdown(t, root, name)
		t.Run(name, func(t *testing.T) {
			var sh []block
			text := ""
			shown := map[int]string{} // an sh block's line: the output block after it
			for i, b := range f.blocks {
				if b.lang == "sh" {
					sh = append(sh, b)
					text += b.text()
					if i+1 < len(f.blocks) && (f.blocks[i+1].lang == "" || f.blocks[i+1].lang == "text") {
						shown[b.line] = f.blocks[i+1].text()
					}
				}
			}
			if len(sh) == 0 {
				t.Skip("no sh blocks")
			}
			exampleText := ""
			_ = filepath.WalkDir(filepath.Join(root, "examples"), func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					b, _ := os.ReadFile(p)
					exampleText += string(b)
				}
				return nil
			})
			seen := map[string]bool{simPort: true, "9000": true}
			for _, m := range loopbackRE.FindAllStringSubmatch(text+exampleText, -1) {
				seen[m[2]] = true
			}
			var want []string
			for p := range seen {
				want = append(want, p)
			}
			sort.Strings(want)
			free := freePorts(t, len(want))
			ports := portMap{}
			for i, p := range want {
				ports[p] = free[i]
			}
			dir := t.TempDir()
			copyExamples(t, root, dir, ports)
			for _, b := range sh {
				t.Run(fmt.Sprintf("line%d", b.line), func(t *testing.T) {
					d, err := parseDirectives(b.directive)
					if err != nil {
						t.Fatalf("%s: %v", b.where(-1), err)
					}
					if d.skip != "" {
						t.Skipf("%s: not run: %s", b.where(-1), d.skip)
					}
					for _, prog := range d.needs {
						if _, err := exec.LookPath(prog); err != nil {
							t.Skipf("%s: not run: needs %s, which is not on PATH", b.where(-1), prog)
						}
					}
					src, ownSim := script(b, ports)
					simAddr := "127.0.0.1:" + ports[simPort]
					if a, rest, ok := simAt(d.sim); ok && ports[a] != "" {
						// "sim --addr 127.0.0.1:PORT ...": the block's server
						// stands where the docs say a real one listens.
						simAddr, d.sim = "127.0.0.1:"+ports[a], rest
					}
					if d.hasSim || (!ownSim && strings.Contains(src, simAddr)) {
						stop := startSim(t, bin, simAddr, d.sim)
						defer stop()
					}
					ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
					defer cancel()
					cmd := exec.CommandContext(ctx, "bash", "-c", src)
					cmd.Dir = dir
					cmd.Env = append(os.Environ(), "PATH="+path, "CI=true")
					cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
					cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
					cmd.WaitDelay = 10 * time.Second
					start := time.Now()
					out, err := cmd.CombinedOutput()
					if cmd.Process != nil {
						_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything the block left behind
					}
					code := 0
					var ee *exec.ExitError
					switch {
					case ctx.Err() != nil:
						t.Fatalf("%s: still running after %v\n%s\n--- output:\n%s", b.where(-1), d.timeout, src, tail(out))
					case errors.As(err, &ee):
						code = ee.ExitCode()
					case err != nil:
						t.Fatalf("%s: %v", b.where(-1), err)
					}
					if code != d.exit {
						t.Errorf("%s: exit status %d, want %d\n--- script:\n%s\n--- output:\n%s", b.where(-1), code, d.exit, src, tail(out))
					}
					for _, fp := range fingerprintRE.FindAllString(shown[b.line], -1) {
						if !strings.Contains(string(out), fp) {
							t.Errorf("%s: the output shown after the block says %q, which its commands did not print (update it)\n--- output:\n%s", b.where(-1), fp, tail(out))
						}
					}
					t.Logf("%s: exit %d in %v", b.where(-1), code, time.Since(start).Round(100*time.Millisecond))
				})
			}
		})
	}
}

// tail is the end of a block's output, enough to see why it failed.
func tail(out []byte) string {
	const max = 6000
	if len(out) > max {
		return "...\n" + string(out[len(out)-max:])
	}
	return string(out)
}
