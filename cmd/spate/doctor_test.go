package main

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/sim"
)

// TestDoctor runs spate doctor against the simulator: the table and the
// JSON, and its exit codes (2 for usage, 1 for a target nothing answers
// at).
func TestDoctor(t *testing.T) {
	_, target := startSim(t, sim.Deterministic(time.Millisecond, time.Millisecond, 0))
	code, stdout, stderr := cli(t, context.Background(), "doctor", "--target", target)
	if code != 0 || !strings.Contains(stdout, "ignore_eos   ok       honoured: 8 of 8 tokens") || !strings.Contains(stdout, "--scrape "+strings.TrimSuffix(target, "/v1")+"/metrics") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = cli(t, context.Background(), "doctor", "--target", target, "--format", "json")
	var r struct {
		Server struct {
			Software string `json:"software"`
		} `json:"server"`
		Findings []struct{ Check, Status string } `json:"findings"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); code != 0 || err != nil || r.Server.Software != "spate sim" || len(r.Findings) < 15 {
		t.Errorf("json: exit %d, %v, %+v", code, err, r)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"doctor"}, exitUsage, "--target is required"},
		{[]string{"doctor", "--target", target, "--format", "xml"}, exitUsage, `--format "xml": want text or json`},
		{[]string{"doctor", "--target", "127.0.0.1:8000"}, exitUsage, "not the API's base URL"},
		{[]string{"doctor", "--target", target, "--header", "no colon"}, exitUsage, "want 'Name: value'"},
		{[]string{"doctor", "--target", closed}, 1, "unreachable: target " + closed},
	} {
		code, _, stderr := cli(t, context.Background(), c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

// TestTokenizerServerAgainstSim: --tokenizer server builds prompts in the
// simulator's own tokens (its /tokenize): 200 asked arrive as 200 in the
// server's usage, and the result names the endpoint.
func TestTokenizerServerAgainstSim(t *testing.T) {
	_, target := startSim(t, sim.Deterministic(time.Millisecond, time.Millisecond, 0))
	out := t.TempDir() + "/r.json"
	code, _, stderr := cli(t, context.Background(), "run", "--target", target, "--api", "completions", "--tokenizer", "server",
		"--input-tokens", "200", "--output-tokens", "4", "--requests", "20", "--concurrency", "4", "--out", out, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := readResult(t, out)
	in := r.Scenarios[0].Metrics["input_tokens"]
	if r.Provenance.Tokenizer != "server:"+strings.TrimSuffix(target, "/v1")+"/tokenize" || in.Count != 20 || in.Min != 200 || in.Max != 200 {
		t.Errorf("tokenizer %q, input tokens %+v", r.Provenance.Tokenizer, in)
	}
}
