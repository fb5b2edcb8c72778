package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/llmtest"
)

// captureServer is an llmtest server that also keeps every request body.
type captureServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func newCaptureServer(t *testing.T) *captureServer {
	t.Helper()
	up := llmtest.NewServer(llmtest.Config{TTFT: time.Millisecond, ITL: time.Millisecond, Tokens: 2})
	t.Cleanup(up.Close)
	c := &captureServer{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPost {
			c.mu.Lock()
			c.bodies = append(c.bodies, b)
			c.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		up.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(c.Close)
	return c
}

// messages returns the chat messages of every request received.
func (c *captureServer) messages(t *testing.T) [][]struct{ Role, Content string } {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]struct{ Role, Content string }
	for _, b := range c.bodies {
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatalf("request body %s: %v", b, err)
		}
		out = append(out, req.Messages)
	}
	return out
}

// TestTemplatesInIntentsAndSystemPrompt is issue 21's "templates are sent
// literally": a workload whose intent prompts and system prompt hold
// payload templates sends them filled, per request, with the same functions
// as datasets, and the same seed sends the same text.
func TestTemplatesInIntentsAndSystemPrompt(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	dir := t.TempDir()
	wl := filepath.Join(dir, "w.yaml")
	os.WriteFile(wl, []byte(`systemPrompt: {text: 'You answer in a {{.Choice "terse" "friendly"}} tone.'}
intents:
  - name: geo
    weight: 1
    prompts: ['What is the capital of {{.Choice "France" "Spain" "Italy"}}? (request {{.Seq}})']
`), 0o644)
	run := func() [][]struct{ Role, Content string } {
		srv := newCaptureServer(t)
		code, _, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", srv.URL+"/v1", "--model", "m", "--workload", wl,
			"--concurrency", "1", "--requests", "12", "--output-tokens", "2", "--seed", "7", "--quiet", "--out", filepath.Join(dir, "r.json"))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		return srv.messages(t)
	}
	got := run()
	if len(got) != 12 {
		t.Fatalf("%d requests, want 12", len(got))
	}
	countries, tones := map[string]int{}, map[string]int{}
	for _, msgs := range got {
		if len(msgs) != 2 || msgs[0].Role != "system" || msgs[1].Role != "user" {
			t.Fatalf("messages %+v: want a system and a user message", msgs)
		}
		for _, m := range msgs {
			if strings.Contains(m.Content, "{{") || strings.Contains(m.Content, ".Choice") {
				t.Fatalf("a template was sent literally: %q", m.Content)
			}
		}
		for _, c := range []string{"France", "Spain", "Italy"} {
			if strings.Contains(msgs[1].Content, c) {
				countries[c]++
			}
		}
		for _, tone := range []string{"terse", "friendly"} {
			if msgs[0].Content == "You answer in a "+tone+" tone." {
				tones[tone]++
			}
		}
	}
	if len(countries) < 2 || len(tones) < 2 || tones["terse"]+tones["friendly"] != 12 {
		t.Errorf("countries %v, tones %v: want the choices drawn per request", countries, tones)
	}
	// Seeded: the same run sends the same text.
	again := run()
	for i := range got {
		if got[i][0] != again[i][0] || got[i][1] != again[i][1] {
			t.Fatalf("request %d differs between two runs of one seed: %+v vs %+v", i, got[i], again[i])
		}
	}
}

// TestTemplatesReachWorkflowSteps checks that a workflow step sees the
// filled prompt of an intent template, and that its own body template
// draws from the same functions.
func TestTemplatesReachWorkflowSteps(t *testing.T) {
	srv := newCaptureServer(t)
	dir := t.TempDir()
	wl, wf := filepath.Join(dir, "w.yaml"), filepath.Join(dir, "wf.yaml")
	os.WriteFile(wl, []byte(`intents:
  - {name: geo, weight: 1, prompts: ['Capital of {{.Choice "France" "Spain"}}?']}
`), 0o644)
	os.WriteFile(wf, []byte(`name: one
steps:
  - name: generate
    url: "{{.Vars.target}}/chat/completions"
    body: '{"model": "m", "max_tokens": 2, "messages": [{"role": "user", "content": {{json (print .Vars.prompt " in " (.Choice "one" "two") " words")}}}]}'
`), 0o644)
	code, _, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", srv.URL+"/v1", "--model", "m", "--workload", wl, "--workflow", wf,
		"--concurrency", "1", "--requests", "6", "--quiet", "--out", filepath.Join(dir, "r.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	msgs := srv.messages(t)
	if len(msgs) != 6 {
		t.Fatalf("%d step requests, want 6", len(msgs))
	}
	for _, m := range msgs {
		c := m[0].Content
		if strings.Contains(c, "{{") || !strings.HasPrefix(c, "Capital of ") || !(strings.Contains(c, " in one words") || strings.Contains(c, " in two words")) {
			t.Errorf("step request content %q: want the intent's template and the step's filled", c)
		}
	}
}
