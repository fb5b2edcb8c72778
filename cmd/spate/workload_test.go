package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/internal/workload/logbuild/cluster"
	"github.com/spate-dev/spate/internal/workload/payload"
	"github.com/spate-dev/spate/llmtest"
	"github.com/spate-dev/spate/sim"
)

// workloadTopics are the planted topics of workloadPlantedLog.
var workloadTopics = [][]string{
	{"refund", "charged", "invoice", "billing", "payment", "card", "subscription", "receipt"},
	{"password", "login", "locked", "reset", "two-factor", "username", "verification", "session"},
	{"shipping", "parcel", "courier", "tracking", "delivery", "warehouse", "damaged", "address"},
	{"endpoint", "timeout", "webhook", "sdk", "latency", "json", "ratelimit", "integration"},
}

// workloadPlantedLog writes a log of perTopic queries per planted topic
// (topic words plus shared filler) and returns its path and the topic of
// each query text.
func workloadPlantedLog(t *testing.T, perTopic int) (string, map[string]int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, 12))
	filler := []string{"help", "today", "urgent", "question", "again", "still", "hello", "team", "problem", "need"}
	topicOf := map[string]int{}
	var lines []string
	for tp, vocab := range workloadTopics {
		for i := 0; i < perTopic; i++ {
			var w []string
			for range 3 + rng.IntN(2) {
				w = append(w, vocab[rng.IntN(len(vocab))])
			}
			for range 2 {
				w = append(w, filler[rng.IntN(len(filler))])
			}
			w = append(w, fmt.Sprintf("q%d", tp*perTopic+i)) // every line distinct
			rng.Shuffle(len(w), func(a, b int) { w[a], w[b] = w[b], w[a] })
			s := strings.Join(w, " ")
			topicOf[s] = tp
			lines = append(lines, s)
		}
	}
	rng.Shuffle(len(lines), func(a, b int) { lines[a], lines[b] = lines[b], lines[a] })
	path := filepath.Join(t.TempDir(), "log.txt")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, topicOf
}

func readWorkloadLines(t *testing.T, path string) []cluster.Line {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []cluster.Line
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l cluster.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("workload line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

func TestWorkloadBuildPlantedLog(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	log, topicOf := workloadPlantedLog(t, 60)
	dir := t.TempDir()
	out := filepath.Join(dir, "w.jsonl")
	code, stdout, stderr := cli(t, context.Background(), "workload", "build", log, "-o", out, "--k", "auto", "--k-max", "8", "--samples", "5", "--seed", "3")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	t.Logf("stdout:\n%s", stdout)
	var sum cluster.Summary
	raw, err := os.ReadFile(filepath.Join(dir, "w.summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.K != 4 || sum.KChosenBy != "linkage gap" || sum.Queries != 240 || len(sum.Clusters) != 4 {
		t.Fatalf("summary: k %d by %s, %d queries, %d clusters; want k 4 by linkage gap over 240", sum.K, sum.KChosenBy, sum.Queries, len(sum.Clusters))
	}
	lines := readWorkloadLines(t, out)
	if len(lines) != 20 || sum.Lines != 20 {
		t.Fatalf("%d lines (summary says %d), want 4 clusters × 5", len(lines), sum.Lines)
	}
	// Every representative of a cluster comes from the same planted topic,
	// and the four clusters are the four topics.
	topicOfLabel := map[string]int{}
	for _, l := range lines {
		if l.Intent == "" || l.Labels["cluster"] != l.Intent || !strings.HasPrefix(l.Intent, "c") {
			t.Fatalf("line %+v: want intent = labels.cluster = c<N>-<term>", l)
		}
		tp, ok := topicOf[l.Prompt]
		if !ok {
			t.Fatalf("line %q is not a query of the log", l.Prompt)
		}
		if prev, seen := topicOfLabel[l.Intent]; seen && prev != tp {
			t.Errorf("cluster %s holds topics %d and %d", l.Intent, prev, tp)
		}
		topicOfLabel[l.Intent] = tp
	}
	seen := map[int]bool{}
	for _, tp := range topicOfLabel {
		seen[tp] = true
	}
	if len(seen) != 4 {
		t.Errorf("clusters cover topics %v, want all 4", seen)
	}
	for _, want := range []string{"240 queries, 4 clusters of at least 5 (k by the largest linkage gap over k = 2..8", "label", "top terms", "example", "workload written to " + out + " (20 lines)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}

	// spate run reads the file as a dataset: prompt, intent, labels.
	ds, err := workload.LoadDataset(out)
	if err != nil {
		t.Fatalf("the workload is not a spate dataset: %v", err)
	}
	for n := 0; n < ds.Len(); n++ {
		req, _ := ds.Request(uint64(n))
		if req.Prompt != lines[n].Prompt || req.Intent != lines[n].Intent || len(req.Labels) != 1 || req.Labels[0].Key != "cluster" || req.Labels[0].Value != lines[n].Intent {
			t.Fatalf("dataset request %d = %+v, want prompt %q intent and cluster label %q", n, req, lines[n].Prompt, lines[n].Intent)
		}
	}

	// The same seed writes the same files.
	out2 := filepath.Join(dir, "w2.jsonl")
	if code, _, stderr := cli(t, context.Background(), "workload", "build", log, "-o", out2, "--k-max", "8", "--samples", "5", "--seed", "3"); code != 0 {
		t.Fatalf("second run: exit %d: %s", code, stderr)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(out2)
	if string(a) != string(b) {
		t.Error("the same seed wrote different workloads")
	}
}

func TestWorkloadBuildWeightedJSONL(t *testing.T) {
	// A JSONL log with chat messages: 30 billing queries, 10 login ones.
	var b strings.Builder
	for i := 0; i < 40; i++ {
		q := fmt.Sprintf("refund my card payment invoice number %d", i)
		if i%4 == 3 {
			q = fmt.Sprintf("password reset login locked user %d", i)
		}
		m, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "system", "content": "be nice"}, {"role": "user", "content": q}}})
		b.Write(m)
		b.WriteByte('\n')
	}
	dir := t.TempDir()
	log, out, sumPath := filepath.Join(dir, "log.jsonl"), filepath.Join(dir, "w.jsonl"), filepath.Join(dir, "s.json")
	os.WriteFile(log, []byte(b.String()), 0o644)
	code, stdout, stderr := cli(t, context.Background(), "workload", "build", log, "-o", out, "--field", "messages", "--k", "2", "--samples", "4", "--weights", "--summary", sumPath)
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	count := map[string]int{}
	intents := map[string]string{}
	for _, l := range readWorkloadLines(t, out) {
		topic := "login"
		if strings.Contains(l.Prompt, "refund") {
			topic = "billing"
		}
		count[topic]++
		if prev, ok := intents[topic]; ok && prev != l.Intent {
			t.Errorf("%s lines carry intents %s and %s", topic, prev, l.Intent)
		}
		intents[topic] = l.Intent
	}
	// 2 clusters × 4 samples = 8 lines, shared 30:10 → 6 and 2.
	if count["billing"] != 6 || count["login"] != 2 || intents["billing"] == intents["login"] {
		t.Errorf("lines per topic %v (intents %v), want 6 billing and 2 login lines in two clusters", count, intents)
	}
	if _, err := os.Stat(sumPath); err != nil {
		t.Errorf("--summary file: %v", err)
	}
}

// TestWorkloadBuildTemplateLikeQueries checks that a query holding "{{"
// reaches the workload as written: the dataset reader would otherwise take
// it for a payload template.
func TestWorkloadBuildTemplateLikeQueries(t *testing.T) {
	dir := t.TempDir()
	log, out := filepath.Join(dir, "log.txt"), filepath.Join(dir, "w.jsonl")
	q := "why does {{ .Name }} print nothing in my go template"
	os.WriteFile(log, []byte(q+"\nrefund my order\n"), 0o644)
	if code, stdout, stderr := cli(t, context.Background(), "workload", "build", log, "-o", out, "--k", "2"); code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	ds, err := workload.LoadDataset(out)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for n := 0; n < ds.Len(); n++ {
		req, _ := ds.Request(uint64(n))
		if req.PromptTemplate == nil {
			continue
		}
		got, err := req.PromptTemplate.Execute(payload.NewData(0, nil, 1))
		if err != nil || got != q {
			t.Errorf("rendered prompt %q (%v), want %q", got, err, q)
		}
		found = true
	}
	if !found {
		t.Error("the template-like query is missing from the workload")
	}
}

func TestWorkloadBuildUsageAndInputErrors(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log.csv")
	os.WriteFile(log, []byte("id,text\n1,refund\n"), 0o644)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"workload", "build", log}, 2, "needs -o FILE"},
		{[]string{"workload", "build", log, "-o", filepath.Join(dir, "w.jsonl"), "--k", "x"}, 2, `--k "x"`},
		{[]string{"workload", "build", log, "-o", filepath.Join(dir, "w.jsonl"), "--samples", "0"}, 2, "--samples 0"},
		{[]string{"workload", "build", log, "-o", filepath.Join(dir, "w.jsonl"), "--model", "m"}, 2, "give --target too"},
		{[]string{"workload", "build", log, "-o", filepath.Join(dir, "w.jsonl")}, 1, `log.csv, line 1: no column "prompt"`},
		{[]string{"workload", "build", filepath.Join(dir, "nope.txt"), "-o", filepath.Join(dir, "w.jsonl")}, 1, "nope.txt"},
		{[]string{"workload"}, 2, "needs a subcommand"},
	}
	for _, tt := range tests {
		code, _, stderr := cli(t, context.Background(), tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tt.args[2:], code, stderr, tt.code, tt.want)
		}
	}
}

// TestWorkloadBuildRemoteEmbeddings builds a workload with the in-process
// simulator's /v1/embeddings. The simulator's embeddings hash words and
// spellings, they are not semantic: the test checks the path works (all
// queries embedded, clusters and lines written, the key never printed),
// not purity.
func TestWorkloadBuildRemoteEmbeddings(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	_, target := startSim(t, sim.Deterministic(time.Millisecond, time.Millisecond, 0))
	log, _ := workloadPlantedLog(t, 15)
	out := filepath.Join(t.TempDir(), "w.jsonl")
	code, stdout, stderr := cli(t, context.Background(), "workload", "build", log, "-o", out, "--target", target,
		"--api-key", "sk-very-secret", "--k", "4", "--samples", "3", "--batch", "16")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	t.Logf("stdout:\n%s", stdout)
	if strings.Contains(stdout+stderr, "sk-very-secret") {
		t.Error("the API key was printed")
	}
	if !strings.Contains(stderr, "embeddings of model") || !strings.Contains(stdout, "60 queries, 4 clusters of at least 5 (k given") {
		t.Errorf("stdout %q / stderr %q: want the remote embedding named and 60 queries in 4 clusters", stdout, stderr)
	}
	if n := len(readWorkloadLines(t, out)); n != 12 {
		t.Errorf("%d lines, want 4 × 3", n)
	}
	// An unreachable target fails with exit 1, naming it.
	code, _, stderr = cli(t, context.Background(), "workload", "build", log, "-o", out, "--target", "http://127.0.0.1:1/v1", "--model", "m")
	if code != 1 || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("unreachable target: exit %d, stderr %q", code, stderr)
	}
}

// TestWorkloadBuildThenRun feeds a built workload to spate run: every
// request carries its cluster as intent and label, so the result breaks
// the figures down by cluster.
func TestWorkloadBuildThenRun(t *testing.T) {
	// Not a timing test: it runs beside the others (validity is not its subject).
	t.Parallel()
	log, _ := workloadPlantedLog(t, 20)
	dir := t.TempDir()
	w, res := filepath.Join(dir, "w.jsonl"), filepath.Join(dir, "r.json")
	if code, stdout, stderr := cli(t, context.Background(), "workload", "build", log, "-o", w, "--k", "4", "--samples", "3"); code != 0 {
		t.Fatalf("build: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	srv := llmtest.NewServer(llmtest.Config{TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	defer srv.Close()
	if code, stdout, stderr := cli(t, context.Background(), "run", "--allow-invalid", "--target", srv.BaseURL(), "--dataset", w, "--rate", "100",
		"--requests", "24", "--output-tokens", "4", "--out", res, "--quiet", "--lag-bound", "250ms"); code != 0 {
		t.Fatalf("run: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	r := readResult(t, res)
	sc := r.Scenarios[0]
	for _, key := range []string{"intent", "cluster"} {
		groups := sc.Breakdown[key]
		total := 0
		for label, g := range groups {
			if !strings.HasPrefix(label, "c") {
				t.Errorf("breakdown[%s] has label %q, want c<N>-<term>", key, label)
			}
			total += int(g.Requests.Total)
		}
		if len(groups) != 4 || total != 24 {
			t.Errorf("breakdown[%s]: %d groups, %d requests; want 4 clusters, 24 requests (%+v)", key, len(groups), total, groups)
		}
	}
}

func TestWorkloadBuildFromStdin(t *testing.T) {
	out := filepath.Join(t.TempDir(), "w.jsonl")
	root := newRootCmd()
	root.SetIn(strings.NewReader("id,prompt\n1,refund my card\n2,password reset locked\n3,refund card payment\n"))
	var stdout, stderr strings.Builder
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs([]string{"workload", "build", "-", "--format", "csv", "-o", out, "--k", "2"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("%v\nstderr %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "embedding 3 queries from stdin") || len(readWorkloadLines(t, out)) != 3 {
		t.Errorf("stdout %q stderr %q: want 3 queries from stdin in 3 lines", stdout.String(), stderr.String())
	}
}

// TestWorkloadBuildMutate builds a workload with --mutate: lines rewritten
// where the draws fell, each keeping its original in vars.original and the
// kinds in labels.mutation, the same lines for the same seed; a bad spec is
// a usage error.
func TestWorkloadBuildMutate(t *testing.T) {
	log, topicOf := workloadPlantedLog(t, 20)
	dir := t.TempDir()
	build := func(out string) []cluster.Line {
		if code, stdout, stderr := cli(t, context.Background(), "workload", "build", log, "-o", out, "--k", "4", "--samples", "5", "--mutate", "typo,order@0.5"); code != 0 {
			t.Fatalf("build: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
		}
		return readWorkloadLines(t, out)
	}
	a, b := build(filepath.Join(dir, "a.jsonl")), build(filepath.Join(dir, "b.jsonl"))
	mutated := 0
	for i, l := range a {
		if l.Prompt != b[i].Prompt {
			t.Fatalf("line %d differs between two builds of one seed: %q and %q", i, l.Prompt, b[i].Prompt)
		}
		switch m := l.Labels["mutation"]; {
		case m == "none":
			if l.Vars != nil {
				t.Errorf("unmutated line %d has vars %v", i, l.Vars)
			}
			if _, ok := topicOf[l.Prompt]; !ok {
				t.Errorf("unmutated line %d is not a query of the log: %q", i, l.Prompt)
			}
		case m == "typo" || m == "order" || m == "order+typo":
			mutated++
			orig := l.Vars["original"]
			if _, ok := topicOf[orig]; !ok || orig == l.Prompt {
				t.Errorf("line %d: original %q (of the log: %v), prompt %q", i, orig, ok, l.Prompt)
			}
		default:
			t.Errorf("line %d: mutation label %q", i, m)
		}
	}
	if mutated < len(a)/2 {
		t.Errorf("%d of %d lines mutated at strength 0.5", mutated, len(a))
	}
	if code, _, stderr := cli(t, context.Background(), "workload", "build", log, "-o", filepath.Join(dir, "c.jsonl"), "--mutate", "shout"); code != 2 || !strings.Contains(stderr, `unknown kind "shout"`) {
		t.Errorf("bad --mutate: exit %d, stderr %q", code, stderr)
	}
}
