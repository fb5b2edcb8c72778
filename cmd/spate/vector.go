package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/client/vector"
	"github.com/spate-dev/spate/internal/flagbind"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/internal/workload"
)

func newVectorCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "vector",
		Short: "Vector search datasets, ground truth, loading, and embedding drift",
		Long:  help("vector"),
	}
	c.AddCommand(newVectorGenCmd(), newVectorTruthCmd(), newVectorLoadCmd(), newVectorDriftCmd())
	return c
}

func newVectorGenCmd() *cobra.Command {
	var out string
	var seed uint64
	c := &cobra.Command{
		Use:   "gen N,DIM,CLUSTERS,QUERIES -o FILE.jsonl",
		Short: "Write a generated dataset of clustered vectors and queries (seeded)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErr("-o FILE is required")
			}
			cfg, err := vector.ParseGen(args[0], seed)
			if err != nil {
				return usageErr("%v", err)
			}
			ds, err := vector.Generate(cfg)
			if err != nil {
				return err
			}
			if err := ds.WriteFile(out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d vectors and %d queries of %d dimensions written to %s (sha256 %s)\n", len(ds.Vectors), len(ds.Queries), ds.Dim, out, ds.Digest()[:16])
			return nil
		},
	}
	c.Flags().StringVarP(&out, "out", "o", "", "dataset file to write (JSONL)")
	c.Flags().Uint64Var(&seed, "seed", 1, "seed of the generated vectors")
	return c
}

func newVectorTruthCmd() *cobra.Command {
	var metric, cache, dataset string
	var k int
	var seed uint64
	var lim experiment.Limits
	c := &cobra.Command{
		Use:   "truth --dataset FILE|gen:N,DIM,CLUSTERS,QUERIES",
		Short: "Compute (or find cached) the exact top-k of every query by brute force",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := vector.ParseMetric(metric)
			if err != nil {
				return usageErr("--metric: %v", err)
			}
			ds, err := vectorDataset(cmd.Context(), dataset, seed, lim)
			if err != nil {
				return err
			}
			start := time.Now()
			t, err := vector.CachedTruth(cmd.Context(), vector.TruthDir(cache), ds, m, k)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ground truth: top-%d of %d queries among %d vectors (%s), dataset sha256 %s, in %s (cache %s)\n",
				t.K, len(t.IDs), len(ds.Vectors), m, t.Digest[:16], time.Since(start).Round(time.Millisecond), vector.TruthDir(cache))
			return nil
		},
	}
	c.Flags().StringVar(&dataset, "dataset", "gen:2000,64,20,100", "JSONL dataset file or gen:N,DIM,CLUSTERS,QUERIES")
	c.Flags().StringVar(&metric, "metric", "cosine", "cosine, l2 or dot")
	c.Flags().IntVar(&k, "k", 10, "neighbours per query")
	c.Flags().StringVar(&cache, "cache", "", "cache directory (default: the user cache dir, spate/truth)")
	c.Flags().Uint64Var(&seed, "seed", 1, "seed of a generated dataset")
	c.Flags().Var(flagbind.Limits(&lim), "limit", datasetLimitUsage)
	return c
}

func newVectorLoadCmd() *cobra.Command {
	var metric, dataset string
	var seed uint64
	var lim experiment.Limits
	c := &cobra.Command{
		Use:   "load URL --dataset FILE|gen:...",
		Short: "Load a dataset into a vector database (replaces the table or collection)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := vector.ParseMetric(metric)
			if err != nil {
				return usageErr("--metric: %v", err)
			}
			ds, err := vectorDataset(cmd.Context(), dataset, seed, lim)
			if err != nil {
				return err
			}
			idx, err := vector.Open(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			defer idx.Close()
			start := time.Now()
			if err := idx.Load(cmd.Context(), ds, m); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "loaded %d vectors into %s (%s) in %s\n", len(ds.Vectors), idx.Backend(), scrub.URL(args[0]), time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	c.Flags().StringVar(&dataset, "dataset", "gen:2000,64,20,100", "JSONL dataset file or gen:N,DIM,CLUSTERS,QUERIES")
	c.Flags().StringVar(&metric, "metric", "cosine", "cosine, l2 or dot")
	c.Flags().Uint64Var(&seed, "seed", 1, "seed of a generated dataset (use the same as spate run's)")
	c.Flags().Var(flagbind.Limits(&lim), "limit", datasetLimitUsage)
	return c
}

func newVectorDriftCmd() *cobra.Command {
	var f vector.DriftFlags
	c := &cobra.Command{
		Use:   "drift --target URL --model M --baseline FILE",
		Short: "Embed fixed canary texts and report norm shift and cosine drift against a stored baseline",
		Long:  help("vector-drift"),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w, err := f.Watch(os.Getenv)
			if err != nil {
				return usageErr("%w", err)
			}
			out := cmd.OutOrStdout()
			worst, err := w.Run(cmd.Context(), out)
			if err != nil {
				return err
			}
			if err := worst.Gate(f.MaxDrift, f.MaxNormShift); err != nil {
				fmt.Fprintf(out, "FAIL: %v\n", err)
				return &exitErr{code: exitThreshold, err: err}
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.Target, "target", "", "API base URL, e.g. http://127.0.0.1:8000/v1")
	fl.StringVar(&f.Model, "model", "", "embedding model")
	fl.StringVar(&f.APIKey, "api-key", "", "API key (default $OPENAI_API_KEY); never written anywhere")
	fl.StringVar(&f.Baseline, "baseline", "", "baseline file: written when missing (or with --update), compared with otherwise")
	fl.BoolVar(&f.Update, "update", false, "write a new baseline instead of comparing")
	fl.Float64Var(&f.MaxDrift, "max-drift", 0.01, "largest acceptable cosine drift (1 − cos) of any canary")
	fl.Float64Var(&f.MaxNormShift, "max-norm-shift", vector.DefaultMaxNormShift, "largest acceptable mean L2-norm shift of the canaries, either way (the seed's recalibration gate)")
	fl.DurationVar(&f.Every, "every", time.Minute, "interval between comparisons when --count > 1")
	fl.IntVar(&f.Count, "count", 1, "how many comparisons to make")
	return c
}

// vectorDataset reads or generates a --dataset; a malformed gen: spec is a
// usage error.
const datasetLimitUsage = "raise a limit on the dataset file, KEY=VALUE (repeatable): fileSize, lineSize (e.g. 4GiB)"

func vectorDataset(ctx context.Context, spec string, seed uint64, lim experiment.Limits) (*vector.Dataset, error) {
	ds, err := vector.LoadDataset(ctx, spec, seed, workload.Limits{FileSize: int64(lim.FileSize), LineSize: int64(lim.LineSize)})
	if errors.Is(err, vector.ErrGenSpec) {
		return nil, usageErr("--dataset %v", err)
	}
	return ds, err
}
