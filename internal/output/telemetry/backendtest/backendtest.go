// Package backendtest starts real telemetry back ends for integration
// tests: an OpenTelemetry Collector that writes what it receives over OTLP
// to a file, and a Prometheus server that scrapes a target. Their binaries
// are built by .ci/setup.d/otelcol.sh and .ci/setup.d/prometheus.sh into
// ${SPATE_CI_CACHE:-$HOME/.cache/spate-ci}/bin; a test skips, naming the
// script, when a binary is in neither that folder nor PATH.
//
// Test support for the outputs stage.
// The data flow: experiment → workload → schedule → engine → client → record
// → metrics → verdict → outputs (docs/design.md).
package backendtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// CacheBin is the folder the setup scripts build into.
func CacheBin() string {
	dir := os.Getenv("SPATE_CI_CACHE")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "spate-ci")
	}
	return filepath.Join(dir, "bin")
}

// Bin finds a binary in CacheBin or PATH, or skips the test naming the
// script that builds it.
func Bin(t testing.TB, name, script string) string {
	t.Helper()
	p := filepath.Join(CacheBin(), name)
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Skipf("%s is not in %s nor on PATH: run `bash %s` (CI runs it) to build it", name, CacheBin(), script)
	return ""
}

// FreeAddr returns a loopback address with a port that was free a moment
// ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs a binary until the test ends, its output in a log file that
// is printed if the test fails.
func start(t testing.TB, bin string, args ...string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), filepath.Base(bin)+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s output:\n%s", filepath.Base(bin), tail(b, 4000))
		}
	})
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// waitFor polls cond every 50 ms until it holds or the timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cond()
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Collector is a running OpenTelemetry Collector.
type Collector struct {
	// HTTP and GRPC are the OTLP receiver's URLs, e.g. http://127.0.0.1:N.
	HTTP, GRPC string
	// File is where the collector writes what it received, a JSON object
	// (OTLP/JSON) a line.
	File string
}

// StartCollector starts a collector with an OTLP receiver (HTTP and gRPC,
// on free loopback ports) whose metrics and traces go to a file.
func StartCollector(t testing.TB) *Collector {
	t.Helper()
	bin := Bin(t, "otelcol-spate", ".ci/setup.d/otelcol.sh")
	dir := t.TempDir()
	grpcAddr, httpAddr := FreeAddr(t), FreeAddr(t)
	c := &Collector{HTTP: "http://" + httpAddr, GRPC: "http://" + grpcAddr, File: filepath.Join(dir, "otlp.jsonl")}
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  file:
    path: %s
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [file]
    traces:
      receivers: [otlp]
      exporters: [file]
`, grpcAddr, httpAddr, c.File)
	cfgPath := filepath.Join(dir, "collector.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	start(t, bin, "--config", cfgPath)
	if !waitFor(30*time.Second, func() bool { return listening(grpcAddr) && listening(httpAddr) }) {
		t.Fatalf("the collector did not listen on %s and %s within 30 s", grpcAddr, httpAddr)
	}
	return c
}

// Lines returns the JSON objects the collector has written so far.
func (c *Collector) Lines(t testing.TB) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(c.File)
	if err != nil {
		return nil
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// WaitLines waits until cond holds on the lines written, and returns them.
func (c *Collector) WaitLines(t testing.TB, timeout time.Duration, cond func([]map[string]any) bool) []map[string]any {
	t.Helper()
	var lines []map[string]any
	waitFor(timeout, func() bool { lines = c.Lines(t); return cond(lines) })
	return lines
}

// Prometheus is a running Prometheus server.
type Prometheus struct {
	URL string
}

// StartPrometheus starts Prometheus scraping target (host:port, path
// /metrics) every interval, with its storage in a temporary folder.
func StartPrometheus(t testing.TB, target string, interval time.Duration) *Prometheus {
	t.Helper()
	bin := Bin(t, "prometheus", ".ci/setup.d/prometheus.sh")
	dir := t.TempDir()
	addr := FreeAddr(t)
	cfg := fmt.Sprintf(`global:
  scrape_interval: %s
  scrape_timeout: %s
scrape_configs:
  - job_name: spate
    static_configs:
      - targets: ['%s']
`, interval, interval, target)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	start(t, bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	p := &Prometheus{URL: "http://" + addr}
	ready := func() bool {
		resp, err := http.Get(p.URL + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	if !waitFor(60*time.Second, ready) {
		t.Fatalf("Prometheus at %s was not ready within 60 s", p.URL)
	}
	return p
}

// Sample is one element of an instant query's result.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query runs an instant PromQL query.
func (p *Prometheus) Query(ctx context.Context, q string) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/query?query="+url.QueryEscape(q), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("query %s: %w", q, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", q, body.Error)
	}
	var out []Sample
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: value %q: %w", q, s, err)
		}
		out = append(out, Sample{Labels: r.Metric, Value: v})
	}
	return out, nil
}
