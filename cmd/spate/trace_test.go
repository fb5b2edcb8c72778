package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/sim"
)

// fastEngine is an engine-mode simulator with prefix caching and steps
// cheap enough for a test.
func fastEngine() sim.Config {
	c := sim.Deterministic(0, 0, 0)
	c.Engine = &sim.EngineConfig{
		MaxNumSeqs: 16, MaxBatchedTokens: 4096, KVCacheTokens: 1 << 16, BlockSize: 16,
		ChunkedPrefill: true, PrefixCaching: true,
		StepBase: 500 * time.Microsecond, DecodePerSeq: 10 * time.Microsecond, PrefillPerToken: time.Microsecond,
	}
	return c
}

// scrapeCounter reads a counter of the simulator's /metrics.
func scrapeCounter(t *testing.T, target, name string) float64 {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(target, "/v1") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && (f[0] == name || strings.HasPrefix(f[0], name+"{")) {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}

// TestTracePrefixCacheHitRate replays two Mooncake traces of 20 prompts of
// 8 blocks of 64 tokens against the engine simulator: in one every prompt
// shares its first 6 blocks with the others, in the other only its first
// 2. The simulator's prefix cache hit rate (vllm:prefix_cache_hits_total
// over queries_total, in tokens) follows the shared fraction: with the
// chat template's 7 tokens, 19 of 20 prompts hit 384 (or 128) of their 519
// tokens: 0.703 and 0.234.
func TestTracePrefixCacheHitRate(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	const rows, blocks, block = 20, 8, 64
	for _, c := range []struct {
		shared int
		want   float64
	}{{6, 19.0 * 6 * block / (20 * (blocks*block + 7))}, {2, 19.0 * 2 * block / (20 * (blocks*block + 7))}} {
		var lines []string
		for i := range rows {
			var ids []string
			for j := range blocks {
				id := j // shared blocks
				if j >= c.shared {
					id = 1000 + i*blocks + j
				}
				ids = append(ids, strconv.Itoa(id))
			}
			lines = append(lines, fmt.Sprintf(`{"timestamp": %d, "input_length": %d, "output_length": 4, "hash_ids": [%s]}`, i*20, blocks*block, strings.Join(ids, ", ")))
		}
		dir := t.TempDir()
		trace := filepath.Join(dir, "trace.jsonl")
		os.WriteFile(trace, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		_, target := startSim(t, fastEngine())
		// --allow-invalid: a busy machine may miss some of the trace's
		// sends (missed_sends); the prefix cache is this test's subject.
		code, _, stderr := cli(t, context.Background(), "run", "--target", target, "--dataset", trace, "--trace-block-size", strconv.Itoa(block),
			"--arrival", "trace", "--max-concurrency", "1", "--quiet", "--out", filepath.Join(dir, "r.json"), "--allow-invalid")
		if code != 0 {
			t.Fatalf("shared %d: exit %d: %s", c.shared, code, stderr)
		}
		hits := scrapeCounter(t, target, "vllm:prefix_cache_hits_total")
		queries := scrapeCounter(t, target, "vllm:prefix_cache_queries_total")
		rate := hits / queries
		// On a busy machine the trace's open loop may miss a few of its
		// sends (15 of 20 sent under three suites): the rate is set
		// against the prompts the server was asked, all but the first a
		// hit on the shared blocks.
		n := math.Round(queries / float64(blocks*block+7))
		want := c.want
		if n >= 2 && n < rows {
			want = (n - 1) * float64(c.shared*block) / (n * float64(blocks*block+7))
		}
		t.Logf("%d of %d blocks shared: prefix cache hit rate %.3f (%.0f of %.0f tokens, %.0f prompts), want %.3f", c.shared, blocks, rate, hits, queries, n, want)
		if n < 2 || math.Abs(rate-want) > 0.01 {
			t.Errorf("%d shared blocks: hit rate %.3f over %.0f prompts, want %.3f", c.shared, rate, n, want)
		}
	}
}

// TestTraceSessionsThinkTimes replays an agent-session trace: two sessions
// of three turns each, later turns sent 150 ms after the answer before
// them (delay), the sessions arriving at their timestamps. Each turn is a
// record with the session's request number and its turn label; a later
// turn is intended (and sent no earlier than) its delay after the turn
// before it ended.
func TestTraceSessionsThinkTimes(t *testing.T) {
	srv := newCaptureServer(t)
	dir := t.TempDir()
	trace := filepath.Join(dir, "sessions.jsonl")
	os.WriteFile(trace, []byte(`{"session_id": "a", "timestamp": 0, "input_length": 32, "output_length": 2, "hash_ids": [1]}
{"session_id": "b", "timestamp": 100, "input_length": 32, "output_length": 2, "hash_ids": [1]}
{"session_id": "a", "delay": 150, "input_length": 20, "output_length": 2, "hash_ids": [2]}
{"session_id": "b", "delay": 150, "input_length": 20, "output_length": 2, "hash_ids": [3]}
{"session_id": "a", "delay": 150, "text_input": "and now?", "output_length": 2}
{"session_id": "b", "delay": 150, "text_input": "thanks", "output_length": 2}
`), 0o644)
	records := filepath.Join(dir, "records.jsonl")
	code, _, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", srv.URL+"/v1", "--model", "m", "--dataset", trace, "--trace-block-size", "32",
		"--arrival", "trace", "--records", records, "--quiet", "--out", filepath.Join(dir, "r.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	type rec struct {
		Seq      uint64            `json:"seq"`
		Intended float64           `json:"intended_ms"`
		Sent     float64           `json:"sent_ms"`
		E2E      float64           `json:"e2e_ms"`
		Labels   map[string]string `json:"labels"`
	}
	f, err := os.Open(records)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	turns := map[uint64][]rec{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r rec
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		turns[r.Seq] = append(turns[r.Seq], r)
	}
	if len(turns) != 2 {
		t.Fatalf("records of %d sessions, want 2", len(turns))
	}
	for seq, ts := range turns {
		if len(ts) != 3 {
			t.Fatalf("session %d: %d turns, want 3", seq, len(ts))
		}
		for i := 1; i < 3; i++ {
			if ts[i].Labels["turn"] != strconv.Itoa(i+1) {
				t.Errorf("session %d record %d: labels %v, want turn %d", seq, i, ts[i].Labels, i+1)
			}
			// Intended its think time after the answer before; sent not
			// before it (a send a stalled machine made late is the
			// schedule lag's figure: seen 300 ms late, three suites at
			// once).
			answered := ts[i-1].Sent + ts[i-1].E2E
			if think := ts[i].Intended - answered; math.Abs(think-150) > 0.01 {
				t.Errorf("session %d turn %d intended %.3f ms after the answer before, want the trace's 150 ms", seq, i+1, think)
			}
			if ts[i].Sent < ts[i].Intended {
				t.Errorf("session %d turn %d sent at %.3f ms, before its think time was over (%.3f ms)", seq, i+1, ts[i].Sent, ts[i].Intended)
			}
		}
	}
	// The sessions' starts are scheduled 100 ms apart (a send may be late
	// on a busy machine: seen 96.2 ms apart when sent, three suites at
	// once; lateness is the schedule lag's figure, not this test's).
	if s0, s1 := turns[0][0].Intended, turns[1][0].Intended; s1-s0 < 99 || s1-s0 > 101 {
		t.Errorf("sessions scheduled %.1f ms apart, want the trace's 100 ms", s1-s0)
	}
	// The later turns carry the history with the real answers.
	msgs := srv.messages(t)
	last := msgs[len(msgs)-1]
	if len(last) != 5 || last[1].Role != "assistant" || last[3].Role != "assistant" || !strings.Contains(last[4].Content, "?") && !strings.Contains(last[4].Content, "thanks") {
		t.Errorf("last request's messages %+v, want 3 user turns with 2 answers between", last)
	}
}
