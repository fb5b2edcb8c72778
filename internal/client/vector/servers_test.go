package vector

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ciCache is where .ci/setup.d scripts install servers.
func ciCache() string {
	if d := os.Getenv("SPATE_CI_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "spate-ci")
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// server is a real database server started for a test, on loopback.
type server struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  *strings.Builder
}

// startServer runs cmd (in dir) and waits until a line of its output
// contains ready, for at most wait. The server ends when the test ends
// (and, since its stdin is a pipe held by the test, when the test process
// dies).
func startServer(t *testing.T, dir, ready string, wait time.Duration, name string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	s := &server{cmd: cmd, done: make(chan struct{}), log: &strings.Builder{}}
	readyc := make(chan struct{})
	lines := make(chan string, 64)
	go func() { // owned by s: ends when the process's output closes
		defer close(lines)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() { // owned by s: waits for the process
		_ = cmd.Wait()
		pw.Close()
		close(s.done)
	}()
	var logDone = make(chan struct{})
	go func() { // owned by s: collects output until it closes
		defer close(logDone)
		once := false
		for l := range lines {
			if s.log.Len() < 64<<10 {
				s.log.WriteString(l + "\n")
			}
			if !once && strings.Contains(l, ready) {
				once = true
				close(readyc)
			}
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-s.done
		}
		<-logDone
	})
	select {
	case <-readyc:
	case <-s.done:
		<-logDone
		t.Fatalf("%s exited before it was ready:\n%s", name, s.log.String())
	case <-time.After(wait):
		t.Fatalf("%s not ready after %v:\n%s", name, wait, s.log.String())
	}
	return s
}

// pgliteServerJS starts PGlite with pgvector behind its Postgres wire
// protocol server on 127.0.0.1:PORT (argv[2]).
const pgliteServerJS = `import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
const port = parseInt(process.argv[2], 10);
const db = await PGlite.create({ extensions: { vector } });
await db.exec('CREATE EXTENSION IF NOT EXISTS vector');
const server = new PGLiteSocketServer({ db, port, host: '127.0.0.1', maxConnections: 64 });
await server.start();
console.log('spate-pglite listening on ' + server.getServerConn());
const stop = async () => { try { await server.stop(); await db.close(); } finally { process.exit(0); } };
process.on('SIGINT', stop); process.on('SIGTERM', stop);
process.stdin.on('end', stop); process.stdin.on('close', stop); process.stdin.resume();
`

// startPglite starts a PGlite (PostgreSQL 18 + pgvector) server installed
// by .ci/setup.d/pglite.sh and returns its DSN; it skips the test when the
// server is not installed.
func startPglite(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(ciCache(), "pglite")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@electric-sql", "pglite-socket")); err != nil {
		t.Skipf("PGlite is not installed in %s: run .ci/setup.d/pglite.sh (needs node and npm)", dir)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: .ci/setup.d/pglite.sh installs it with apt-get")
	}
	script := filepath.Join(dir, "spate-pglite-server.mjs")
	if err := os.WriteFile(script, []byte(pgliteServerJS), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	startServer(t, dir, "spate-pglite listening", 3*time.Minute, node, script, fmt.Sprint(port))
	return fmt.Sprintf("postgres://postgres:postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
}

// startChroma starts a Chroma server installed by .ci/setup.d/chroma.sh
// and returns its base URL; it skips the test when it is not installed.
func startChroma(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(ciCache(), "chroma")
	bin := filepath.Join(dir, "node_modules", ".bin", "chroma")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("Chroma is not installed in %s: run .ci/setup.d/chroma.sh (needs node and npm)", dir)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH: .ci/setup.d/chroma.sh installs it with apt-get")
	}
	port := freePort(t)
	data := t.TempDir()
	startServer(t, dir, "Connect to Chroma at", 2*time.Minute, bin, "run", "--path", data, "--host", "127.0.0.1", "--port", fmt.Sprint(port))
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if err := callJSON(ctx, newHTTPClient(), "GET", base+"/api/v2/heartbeat", nil, nil); err == nil {
			return base
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("chroma at %s does not answer its heartbeat", base)
	return ""
}
