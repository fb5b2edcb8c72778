package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/workload/logbuild/cluster"
	"github.com/spate-dev/spate/internal/workload/logbuild/querylog"
	"github.com/spate-dev/spate/internal/workload/logbuild/textembed"
)

func init() { commands = append(commands, newWorkloadCmd) }

func newWorkloadCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "workload",
		Short: "Build workloads (spate workload build: a workload from a log of real queries)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErr("spate workload needs a subcommand: build")
		},
	}
	c.AddCommand(newWorkloadBuildCmd())
	return c
}

// workloadBuildFlags are the flags of spate workload build.
type workloadBuildFlags struct {
	out, summary          string
	k                     string
	kMax, samples         int
	seed                  uint64
	weights               bool
	format, field, column string
	target, model, apiKey string
	batch, dim            int
	bigrams               bool
	silhouette, restarts  int
}

func newWorkloadBuildCmd() *cobra.Command {
	var f workloadBuildFlags
	c := &cobra.Command{
		Use:   "build LOG|- -o workload.jsonl",
		Short: "Build a workload from a log of real queries: embed, cluster, keep representatives",
		Long: `Reads a log of real queries (plain text one a line, JSONL with --field, or CSV
with --column; "-" reads standard input), embeds them (with the built-in hashed TF-IDF embedding, or the
target's /v1/embeddings when --target is given), clusters them with k-means++
(k given, or chosen by silhouette), keeps the --samples queries nearest each
cluster's centroid, and writes them as a spate dataset: one JSON line per
query, {"prompt": ..., "intent": "c3-refund", "labels": {"cluster": "c3-refund"}}.
Prints a summary of the clusters (size, share, top terms, an example) and
writes it as JSON beside the workload. Deterministic with --seed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return workloadBuild(cmd, args[0], &f)
		},
	}
	fl := c.Flags()
	fl.StringVarP(&f.out, "out", "o", "", "workload file to write (JSONL dataset); required")
	fl.StringVar(&f.summary, "summary", "", "cluster summary file (default: the workload's name with .summary.json)")
	fl.StringVar(&f.k, "k", "auto", "number of clusters, or auto to choose it by silhouette among 2..--k-max")
	fl.IntVar(&f.kMax, "k-max", cluster.DefaultKMax, "largest k tried by --k auto")
	fl.IntVar(&f.samples, "samples", cluster.DefaultSamples, "representative queries kept per cluster")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the clustering and of the workload's order")
	fl.BoolVar(&f.weights, "weights", false, "share the workload's lines by cluster size (keep the log's mix) instead of --samples per cluster")
	fl.StringVar(&f.format, "format", querylog.Auto, "log format: auto (from --field/--column and the extension), text, jsonl or csv")
	fl.StringVar(&f.field, "field", "", "JSONL field holding the query (default prompt; a messages field gives its last user message)")
	fl.StringVar(&f.column, "column", "", "CSV column holding the query (default prompt)")
	fl.StringVar(&f.target, "target", "", "embed through this OpenAI-compatible API's /embeddings, e.g. http://127.0.0.1:8000/v1 (default: the local embedding)")
	fl.StringVar(&f.model, "model", "", "embedding model with --target (default: the first the server lists)")
	fl.StringVar(&f.apiKey, "api-key", "", "API key for --target (default $OPENAI_API_KEY); never written anywhere")
	fl.IntVar(&f.batch, "batch", textembed.DefaultBatch, "texts per embeddings request with --target")
	fl.IntVar(&f.dim, "dim", textembed.DefaultDim, "dimensions of the local hashed TF-IDF embedding")
	fl.BoolVar(&f.bigrams, "bigrams", false, "add word pairs to the local embedding's terms")
	fl.IntVar(&f.silhouette, "silhouette-sample", cluster.DefaultSilhouetteSample, "compute the silhouette on at most this many queries (a seeded random sample)")
	fl.IntVar(&f.restarts, "restarts", cluster.DefaultRestarts, "k-means++ restarts per k (the lowest inertia is kept)")
	return c
}

func workloadBuild(cmd *cobra.Command, logPath string, f *workloadBuildFlags) error {
	ctx := cmd.Context()
	if f.out == "" {
		return usageErr("spate workload build needs -o FILE, the workload to write")
	}
	k := 0
	if f.k != "auto" {
		n, err := strconv.Atoi(f.k)
		if err != nil || n < 1 {
			return usageErr("--k %q: want a number of clusters ≥ 1 or auto", f.k)
		}
		k = n
	}
	for _, p := range []struct {
		name string
		v    int
	}{{"--k-max", f.kMax}, {"--samples", f.samples}, {"--batch", f.batch}, {"--dim", f.dim}, {"--silhouette-sample", f.silhouette}, {"--restarts", f.restarts}} {
		if p.v < 1 {
			return usageErr("%s %d: want at least 1", p.name, p.v)
		}
	}
	if k == 0 && f.kMax < 2 {
		return usageErr("--k-max %d: want at least 2 with --k auto", f.kMax)
	}
	if f.field != "" && f.column != "" {
		return usageErr("--field (JSONL) and --column (CSV) exclude each other")
	}
	if f.target == "" && (f.model != "" || f.apiKey != "") {
		return usageErr("--model and --api-key choose the remote embedding: give --target too")
	}
	summaryPath := f.summary
	if summaryPath == "" {
		summaryPath = strings.TrimSuffix(f.out, filepath.Ext(f.out)) + ".summary.json"
	}

	lopt := querylog.Options{Format: f.format, Field: f.field, Column: f.column}
	var qs []querylog.Query
	var err error
	if logPath == "-" {
		logPath = "stdin"
		qs, err = querylog.Read(cmd.InOrStdin(), logPath, lopt)
	} else {
		qs, err = querylog.ReadFile(logPath, lopt)
	}
	if err != nil {
		return err
	}
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Text
	}

	var emb textembed.Embedder = textembed.Local{Dim: f.dim, Bigrams: f.bigrams}
	if f.target != "" {
		key := f.apiKey
		if key == "" {
			key = os.Getenv("OPENAI_API_KEY")
		}
		model := f.model
		if model == "" {
			oc, err := openai.New(openai.Config{BaseURL: f.target, API: openai.Embeddings, APIKey: key})
			if err != nil {
				return usageErr("--target: %v", err)
			}
			ids, err := oc.Models(ctx)
			if err != nil {
				return fmt.Errorf("choosing an embedding model (set --model): %w", err)
			}
			if len(ids) == 0 {
				return fmt.Errorf("the target %s lists no models: set --model", openai.Redact(f.target))
			}
			model = ids[0]
		}
		emb = textembed.Remote{BaseURL: f.target, Model: model, APIKey: key, Batch: f.batch}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "embedding %d queries from %s with %s\n", len(texts), logPath, emb.Name())
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		return err
	}
	res, err := cluster.Build(ctx, texts, vecs, textembed.Fit(texts, f.bigrams), cluster.Options{
		K: k, KMax: f.kMax, Samples: f.samples, Seed: f.seed, Restarts: f.restarts, SilhouetteSample: f.silhouette})
	if err != nil {
		return fmt.Errorf("clustering %s: %w", logPath, err)
	}
	lines := cluster.Lines(res, f.weights, f.seed)
	if err := writeFileWith(f.out, func(w *os.File) error { return cluster.WriteLines(w, lines) }); err != nil {
		return err
	}
	sum := cluster.Summarize(res, lines, logPath, emb.Name(), f.out, f.weights, f.seed)
	if err := writeFileWith(summaryPath, func(w *os.File) error { return sum.WriteJSON(w) }); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if err := sum.WriteTable(out); err != nil {
		return err
	}
	fmt.Fprintf(out, "workload written to %s (%d lines), summary to %s\n", f.out, len(lines), summaryPath)
	return nil
}

// writeFileWith creates path and writes it with write.
func writeFileWith(path string, write func(*os.File) error) error {
	w, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := write(w); err != nil {
		w.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
