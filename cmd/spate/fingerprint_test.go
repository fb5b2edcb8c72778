package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spate-dev/spate/sim"
)

// TestFingerprintCoversAPIAndWorkflow runs the same prompts to two APIs,
// streamed and not, and two workflow files that differ in one step: each
// pair must give two fingerprints, and a repeat the same one.
func TestFingerprintCoversAPIAndWorkflow(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	s, err := sim.New(sim.Deterministic(time.Millisecond, time.Millisecond, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	dir := t.TempDir()
	n := 0
	fingerprint := func(args ...string) string {
		t.Helper()
		n++
		out := filepath.Join(dir, "r"+string(rune('a'+n))+".json")
		args = append([]string{"run", "--allow-invalid", "--target", srv.URL + "/v1", "--requests", "3", "--concurrency", "1",
			"--input-tokens", "8", "--output-tokens", "2", "--progress", "0", "--quiet", "--out", out}, args...)
		code, stdout, stderr := cli(t, context.Background(), args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, stdout, stderr)
		}
		return readResult(t, out).Fingerprint
	}
	chat := fingerprint("--api", "chat")
	if again := fingerprint("--api", "chat"); again != chat {
		t.Errorf("the same run gave fingerprints %s and %s", chat, again)
	}
	if c := fingerprint("--api", "completions"); c == chat {
		t.Errorf("--api chat and --api completions share the fingerprint %s", c)
	}
	if c := fingerprint("--api", "chat", "--stream=false"); c == chat {
		t.Errorf("streamed and not share the fingerprint %s", c)
	}
	step := func(name, maxTokens string) string {
		p := filepath.Join(dir, name)
		spec := "name: one\nsteps:\n  - name: generate\n    url: \"{{.Vars.target}}/chat/completions\"\n" +
			"    body: '{\"model\": {{json .Vars.model}}, \"max_tokens\": " + maxTokens + ", \"messages\": [{\"role\": \"user\", \"content\": {{json .Vars.prompt}}}]}'\n"
		if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := fingerprint("--workflow", step("a.yaml", "2")), fingerprint("--workflow", step("b.yaml", "3"))
	if a == b {
		t.Errorf("two workflow files share the fingerprint %s", a)
	}
	if a == chat {
		t.Errorf("a workflow and a chat run share the fingerprint %s", a)
	}
}
