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

// TestNoSecretInResultSections plants keys where features put URLs and
// errors into the result: a --scrape URL's query (the scrape's error went
// into server.warnings), --chaos-stats userinfo and query (kept in the
// chaos section and the HTML report) and a webhook action's userinfo and
// query (kept in gate.actions, its action and its error): none may appear
// in the result, the HTML report or what is printed.
func TestNoSecretInResultSections(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Config{})
	defer srv.Close()
	dir := t.TempDir()
	exp := filepath.Join(dir, "x.yaml")
	hook := "http://hook:pw-planted-hook@127.0.0.1:1/hook?token=qs-planted-hook"
	yaml := "apiVersion: spate/v1\nkind: Experiment\nstages: [{name: main, rate: 20, requests: 4}]\nactions:\n"
	for _, v := range []string{"pass", "fail", "invalid", "error"} {
		yaml += "  " + v + ": [{webhook: \"" + hook + "\"}]\n"
	}
	if err := os.WriteFile(exp, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	res, html := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html")
	_, stdout, stderr := cli(t, context.Background(), "run", exp, "--target", srv.BaseURL(), "--model", "m",
		"--output-tokens", "4", "--progress", "0s",
		"--scrape", "http://127.0.0.1:1/metrics?access_token=qs-planted-scrape",
		"--chaos-stats", "http://admin:pw-planted-chaos@127.0.0.1:1/admin/stats?k=qs-planted-chaos",
		"--out", res, "--report", html)
	texts := map[string]string{"stdout": stdout, "stderr": stderr}
	for _, p := range []string{res, html} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%s not written: %v\n%s", p, err, stderr)
		}
		texts[filepath.Base(p)] = string(b)
	}
	if !strings.Contains(texts["r.json"], `"actions"`) {
		t.Fatalf("no gate action in the result:\n%s", texts["r.json"])
	}
	for name, text := range texts {
		for _, s := range []string{"pw-planted-hook", "qs-planted-hook", "qs-planted-scrape", "pw-planted-chaos", "qs-planted-chaos"} {
			if strings.Contains(text, s) {
				t.Errorf("%s holds %q", name, s)
			}
		}
	}
}
