package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-dev/spate/sim"
)

// TestLoRAMixWorkload runs examples/workloads/lora-mix.yaml through a proxy
// that keeps every request body, in front of the simulator: each intent's
// requests ask for its model (adapter), temperature and top_p, the agent
// intent carries two tools and the instruction to call them, and the
// result breaks the figures down by model and by mutation. (--allow-invalid:
// events 1 ms apart may be read late on a busy machine, and validity is not
// what this test is about.)
func TestLoRAMixWorkload(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	_, target := startSim(t, sim.Deterministic(2*time.Millisecond, time.Millisecond, 0))
	up, _ := url.Parse(strings.TrimSuffix(target, "/v1"))
	proxy := httputil.NewSingleHostReverseProxy(up)
	proxy.FlushInterval = -1
	var mu sync.Mutex
	var bodies []map[string]any
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var m map[string]any
		if json.Unmarshal(b, &m) == nil && m["messages"] != nil {
			mu.Lock()
			bodies = append(bodies, m)
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", front.URL+"/v1", "--model", "spate-sim",
		"--workload", "../../examples/workloads/lora-mix.yaml", "--concurrency", "4", "--requests", "60", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 60 {
		t.Fatalf("%d bodies, want 60", len(bodies))
	}
	seen := map[string]int{}
	for _, b := range bodies {
		model, _ := b["model"].(string)
		temp, hasTemp := b["temperature"].(float64)
		_, hasTopP := b["top_p"]
		msgs, _ := json.Marshal(b["messages"])
		switch model {
		case "spate-sim:sql-lora":
			if temp != 0.2 || hasTopP {
				t.Errorf("sql: temperature %v top_p %v", b["temperature"], b["top_p"])
			}
		case "spate-sim:support-lora":
			if !hasTemp || temp < 0.3 || temp > 0.8 || b["top_p"] != 0.9 {
				t.Errorf("support: temperature %v top_p %v", b["temperature"], b["top_p"])
			}
		case "spate-sim":
			tools, _ := b["tools"].([]any)
			if len(tools) != 2 || !strings.Contains(string(msgs), "call at least 2 of the tools") || !hasTemp || temp < 0.3 || temp > 0.8 {
				t.Errorf("agent: %d tools, temperature %v, messages %s", len(tools), b["temperature"], msgs)
			}
		default:
			t.Errorf("model %q", model)
		}
		seen[model]++
	}
	if seen["spate-sim:sql-lora"] < 15 || seen["spate-sim:support-lora"] < 8 || seen["spate-sim"] < 4 {
		t.Errorf("models asked %v", seen)
	}
	r := readResult(t, out)
	sc := r.Scenarios[0]
	if g := sc.Breakdown["model"]; g["spate-sim:sql-lora"].Requests.Total != seen["spate-sim:sql-lora"] || g["spate-sim:support-lora"].Requests.Total != seen["spate-sim:support-lora"] {
		t.Errorf("breakdown by model %+v, asked %v", g, seen)
	}
	if r.Provenance.Model != "spate-sim" {
		t.Errorf("provenance model %q: an adapter of the mix, not the target's", r.Provenance.Model)
	}
	total := 0
	for _, g := range sc.Breakdown["mutation"] {
		total += g.Requests.Total
	}
	if total != 60 || len(sc.Breakdown["mutation"]) < 2 {
		t.Errorf("breakdown by mutation %+v", sc.Breakdown["mutation"])
	}
}
