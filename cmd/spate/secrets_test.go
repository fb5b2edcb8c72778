package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spate-dev/spate/llmtest"
)

// TestNoSecretInAnyOutput plants a key, a header value, URL userinfo, a
// query string and a password= parameter, against a server that echoes
// them all in its error bodies, and one that cannot be reached: none may
// appear in any output (summary, progress and errors, result, records,
// HTML, Markdown, JUnit and CSV reports). The key in a query string was
// printed by connection errors and stored in records and error_samples.
func TestNoSecretInAnyOutput(t *testing.T) {
	h := llmtest.NewHostile()
	defer h.Close()
	secrets := []string{"sk-planted-api-key", "hv-planted-header", "pw-planted-userinfo", "qs-planted-query", llmtest.EchoPassword}
	dir := t.TempDir()
	outs := map[string]string{}
	for _, f := range []string{"result.json", "records.jsonl", "report.html", "report.md", "junit.xml", "series.csv"} {
		outs[f] = filepath.Join(dir, f)
	}
	withAuth := func(u string) string {
		return strings.Replace(u, "http://", "http://user:pw-planted-userinfo@", 1) + "?api-version=qs-planted-query"
	}
	for _, target := range []string{withAuth(h.BaseURL(llmtest.Echo)), withAuth("http://127.0.0.1:1/v1")} {
		code, stdout, stderr := cli(t, context.Background(), "run", "--target", target, "--model", "m",
			"--api-key", "sk-planted-api-key", "--header", "X-Api-Key: hv-planted-header",
			"--rate", "20", "--requests", "2", "--output-tokens", "4", "--progress", "100ms",
			"--out", outs["result.json"], "--records", outs["records.jsonl"], "--report", outs["report.html"],
			"--report-md", outs["report.md"], "--junit", outs["junit.xml"], "--series-csv", outs["series.csv"])
		if code != 1 {
			t.Errorf("%s: exit %d, want 1 (every request failed, or the target is unreachable)", target, code)
		}
		texts := map[string]string{"stdout": stdout, "stderr": stderr}
		for name, p := range outs {
			if b, err := os.ReadFile(p); err == nil {
				texts[name] = string(b)
				os.Remove(p)
			}
		}
		if strings.Contains(target, "echo") {
			if !strings.Contains(texts["result.json"], "http_400") || !strings.Contains(texts["records.jsonl"], "bad request to") {
				t.Fatalf("the echo did not reach the outputs:\n%s", texts["result.json"])
			}
		} else if !strings.Contains(stderr, "unreachable") {
			t.Fatalf("stderr %q", stderr)
		}
		for name, text := range texts {
			for _, s := range secrets {
				if strings.Contains(text, s) {
					t.Errorf("%s: %s holds %q:\n%s", target, name, s, text)
				}
			}
		}
	}
}

// TestVectorPasswordNotEchoed: a vector database's password is masked in
// connect errors and in the error of a URL that does not parse (which
// repeated it whole).
func TestVectorPasswordNotEchoed(t *testing.T) {
	for _, target := range []string{"pgvector://u:pw-planted-vector@127.0.0.1:1/db?table=t", "pgvector://u:pw%zzplanted@127.0.0.1:1/db"} {
		code, stdout, stderr := cli(t, context.Background(), "run", "--vector", target, "--rate", "5", "--requests", "2",
			"--out", filepath.Join(t.TempDir(), "r.json"))
		if code == 0 || !strings.Contains(stderr, "<redacted>") {
			t.Errorf("%s: exit %d, stderr %q", target, code, stderr)
		}
		if strings.Contains(stdout+stderr, "planted") {
			t.Errorf("%s: the password is printed:\n%s", target, stderr)
		}
	}
}
