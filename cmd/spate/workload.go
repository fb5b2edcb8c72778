package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/internal/workload/logbuild"
	"github.com/spate-dev/spate/internal/workload/logbuild/cluster"
	"github.com/spate-dev/spate/internal/workload/logbuild/querylog"
	"github.com/spate-dev/spate/internal/workload/logbuild/textembed"
)

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

func newWorkloadBuildCmd() *cobra.Command {
	var o logbuild.Options
	var k string
	c := &cobra.Command{
		Use:   "build LOG|- -o spate-results/workload.jsonl",
		Short: "Build a workload from a log of real queries: embed, cluster, keep representatives",
		Long:  help("workload-build"),
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.SetFlags(k, os.Getenv); err != nil {
				return err
			}
			o.Log, o.In = args[0], cmd.InOrStdin()
			return logbuild.Build(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := c.Flags()
	fl.StringVarP(&o.Out, "out", "o", "", "workload file to write (JSONL dataset); required")
	fl.StringVar(&o.Summary, "summary", "", "cluster summary file (default: the workload's name with .summary.json)")
	fl.StringVar(&k, "k", "auto", "number of clusters, or auto to choose it at the largest linkage gap among 2..--k-max")
	fl.IntVar(&o.Cluster.KMax, "k-max", cluster.DefaultKMax, "largest k tried by --k auto")
	fl.IntVar(&o.Cluster.Samples, "samples", cluster.DefaultSamples, "representative queries kept per cluster")
	fl.Uint64Var(&o.Cluster.Seed, "seed", 1, "seed of the clustering and of the workload's order")
	fl.BoolVar(&o.Weights, "weights", false, "share the workload's lines by cluster size (keep the log's mix) instead of --samples per cluster")
	fl.StringVar(&o.Read.Format, "format", querylog.Auto, "log format: auto (from --field/--column and the extension), text, jsonl or csv")
	fl.StringVar(&o.Read.Field, "field", "", "JSONL field holding the query (default prompt; a messages field gives its last user message)")
	fl.StringVar(&o.Read.Column, "column", "", "CSV column holding the query (default prompt)")
	fl.StringVar(&o.Target, "target", "", "embed through this OpenAI-compatible API's /embeddings, e.g. http://127.0.0.1:8000/v1 (default: the local embedding)")
	fl.StringVar(&o.Model, "model", "", "embedding model with --target (default: the first the server lists)")
	fl.StringVar(&o.APIKey, "api-key", "", "API key for --target (default $OPENAI_API_KEY); never written anywhere")
	fl.IntVar(&o.Batch, "batch", textembed.DefaultBatch, "texts per embeddings request with --target")
	fl.IntVar(&o.Local.Dim, "dim", textembed.DefaultDim, "dimensions of the local hashed TF-IDF embedding")
	fl.BoolVar(&o.Local.Bigrams, "bigrams", false, "add word pairs to the local embedding's terms")
	fl.BoolVar(&o.Local.KeepBoilerplate, "keep-boilerplate", false, "do not learn and down-weight the log's boilerplate (greetings, sign-offs, stock phrases)")
	fl.IntVar(&o.Cluster.MinSize, "min-cluster-size", 0, "size floor of a cluster (0: max(min(5, 10 % of the queries), 2 %)); smaller groups join the nearest cluster or go unclustered")
	fl.IntVar(&o.Cluster.SilhouetteSample, "silhouette-sample", cluster.DefaultSilhouetteSample, "compute the reported silhouette on at most this many queries (a seeded random sample)")
	fl.IntVar(&o.Cluster.Restarts, "restarts", cluster.DefaultRestarts, "k-means++ restarts of each over-clustering (the lowest inertia is kept)")
	fl.StringVar(&o.Mutate, "mutate", "", "rewrite each query, seeded: KIND[,KIND...][@STRENGTH] of synonym, order, whitespace, typo, format or all (original kept in vars.original)")
	return c
}
