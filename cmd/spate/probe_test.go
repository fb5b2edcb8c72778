package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/sim"
)

func TestProbeList(t *testing.T) {
	code, out, errb := cli(t, context.Background(), "probe", "list")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb)
	}
	for _, want := range []string{"injection-direct", "direct-injection", "LLM01", "prompt-extraction", "LLM07", "sensitive-disclosure", "LLM02", "benign"} {
		if !strings.Contains(out, want) {
			t.Errorf("probe list lacks %q:\n%s", want, out)
		}
	}
	if code, _, errb := cli(t, context.Background(), "probe", "list", "--probes", "nope"); code != exitUsage || !strings.Contains(errb, `no probe suite "nope"`) {
		t.Errorf("unknown suite: exit %d, %s", code, errb)
	}
}

// TestProbeRunFlags checks spate run --probes end to end against the
// simulator, fully vulnerable, over two stages of an experiment: each
// stage gets its figures, and every attack succeeds.
func TestProbeRunFlags(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	// Answers of a hundred tokens come at once (no inter-token latency):
	// the probes' verdicts are this test's subject, not timing.
	cfg := sim.Deterministic(20*time.Millisecond, 0, 0)
	cfg.Seed, cfg.Faults.Vulnerability = 1, 1
	s, err := sim.Start(cfg, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url := s.URL
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	code, stdout, errb := cli(t, context.Background(), "run", "--allow-invalid", "--target", url, "--concurrency", "4", "--requests", "60",
		"--output-tokens", "4", "--probes", "injection-direct,benign", "--probe-fraction", "0.5", "--out", out, "--progress", "0")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, errb)
	}
	if !strings.Contains(stdout, "probes [main]") || !strings.Contains(stdout, "direct-injection") {
		t.Errorf("no probe table in the summary:\n%s", stdout)
	}
	sc := readResult(t, out).Scenarios[0]
	p := sc.Probes
	if p == nil || p.Fraction != 0.5 || len(p.Families) != 2 {
		t.Fatalf("probes %+v", p)
	}
	if o := p.Overall; o.Evaluated != 30 || o.AttackSuccess == nil || o.AttackSuccess.K != 15 || o.AttackSuccess.N != 15 || o.FalseRefusal.K != 0 || o.FalseRefusal.N != 15 {
		t.Errorf("overall %+v %+v %+v, want 15/15 attacks followed and 0/15 benign refused", o, o.AttackSuccess, o.FalseRefusal)
	}
	if g := sc.Breakdown["intent"]["probe:direct-injection"]; g.Requests.Total != 15 {
		t.Errorf("breakdown probe:direct-injection %+v, want 15 requests", g.Requests)
	}
}

func TestProbeUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--target", "http://127.0.0.1:1/v1", "--probes", "benign", "--probe-fraction", "0"},
		{"run", "--target", "http://127.0.0.1:1/v1", "--probes", "benign", "--probe-fraction", "1.5"},
		{"run", "--target", "http://127.0.0.1:1/v1", "--probes", "nope"},
		{"run", "--target", "http://127.0.0.1:1/v1", "--probes", "benign", "--api", "completions"},
		{"probe", "run", "--vulnerability", "2"},
		{"probe", "run", "--target", "http://127.0.0.1:1/v1", "--vulnerability", "0.5"},
	} {
		if code, _, errb := cli(t, context.Background(), args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d (%s)", args, code, exitUsage, errb)
		}
	}
}

// TestProbeRunAlone runs probes only against the built-in simulator: at
// vulnerability 1 every attack succeeds, at 0 none does.
func TestProbeRunAlone(t *testing.T) {
	for _, tc := range []struct {
		vuln string
		want func(k, n int) bool
	}{
		{"1", func(k, n int) bool { return k == n && n > 0 }},
		{"0", func(k, n int) bool { return k == 0 && n > 0 }},
	} {
		t.Run("vulnerability "+tc.vuln, func(t *testing.T) {
			t.Parallel() // each run waits on its own simulator
			probeRunAlone(t, tc.vuln, tc.want)
		})
	}
}

// probeRunAlone runs probe run at one vulnerability of the built-in
// simulator and checks the attack success count with want.
func probeRunAlone(t *testing.T, vuln string, want func(k, n int) bool) {
	out := filepath.Join(t.TempDir(), "p.json")
	code, stdout, errb := cli(t, context.Background(), "probe", "run", "--vulnerability", vuln, "--requests", "24",
		"--probes", "injection-direct,prompt-extraction,benign", "--out", out)
	if code != 0 {
		t.Fatalf("vulnerability %s: exit %d\n%s\n%s", vuln, code, stdout, errb)
	}
	sc := readResult(t, out).Scenarios[0]
	p := sc.Probes
	// A request may fail on a loaded machine; it is then in no rate.
	if p == nil || p.Fraction != 1 || p.Overall.Evaluated+p.Overall.Failed != 24 || p.Overall.Evaluated < 20 ||
		!want(p.Overall.AttackSuccess.K, p.Overall.AttackSuccess.N) {
		t.Errorf("vulnerability %s: %+v, request errors %v %v", vuln, p, sc.Requests.Errors, sc.Requests.ErrorSamples)
	}
	if !strings.Contains(stdout, "probes [probes]") {
		t.Errorf("vulnerability %s: no probe table:\n%s", vuln, stdout)
	}
}
