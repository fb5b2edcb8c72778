package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/client/vector"
)

func init() { commands = append(commands, newVectorCmd) }

func newVectorCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "vector",
		Short: "Vector search datasets, ground truth, loading, and embedding drift",
		Long: `Tools around vector search measurement. The load itself runs with
spate run --vector URL (recall@k beside latency, --ef-search sweeps).`,
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
			cfg, err := parseGen(args[0], seed)
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
	c := &cobra.Command{
		Use:   "truth --dataset FILE|gen:N,DIM,CLUSTERS,QUERIES",
		Short: "Compute (or find cached) the exact top-k of every query by brute force",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := vector.ParseMetric(metric)
			if err != nil {
				return usageErr("--metric: %v", err)
			}
			ds, err := loadDataset(dataset, seed)
			if err != nil {
				return err
			}
			start := time.Now()
			t, err := vector.CachedTruth(truthDir(cache), ds, m, k)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ground truth: top-%d of %d queries among %d vectors (%s), dataset sha256 %s, in %s (cache %s)\n",
				t.K, len(t.IDs), len(ds.Vectors), m, t.Digest[:16], time.Since(start).Round(time.Millisecond), truthDir(cache))
			return nil
		},
	}
	c.Flags().StringVar(&dataset, "dataset", "gen:2000,64,20,100", "JSONL dataset file or gen:N,DIM,CLUSTERS,QUERIES")
	c.Flags().StringVar(&metric, "metric", "cosine", "cosine, l2 or dot")
	c.Flags().IntVar(&k, "k", 10, "neighbours per query")
	c.Flags().StringVar(&cache, "cache", "", "cache directory (default: the user cache dir, spate/truth)")
	c.Flags().Uint64Var(&seed, "seed", 1, "seed of a generated dataset")
	return c
}

func newVectorLoadCmd() *cobra.Command {
	var metric, dataset string
	var seed uint64
	c := &cobra.Command{
		Use:   "load URL --dataset FILE|gen:...",
		Short: "Load a dataset into a vector database (replaces the table or collection)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := vector.ParseMetric(metric)
			if err != nil {
				return usageErr("--metric: %v", err)
			}
			ds, err := loadDataset(dataset, seed)
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
			fmt.Fprintf(cmd.OutOrStdout(), "loaded %d vectors into %s (%s) in %s\n", len(ds.Vectors), idx.Backend(), vector.Redact(args[0]), time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	c.Flags().StringVar(&dataset, "dataset", "gen:2000,64,20,100", "JSONL dataset file or gen:N,DIM,CLUSTERS,QUERIES")
	c.Flags().StringVar(&metric, "metric", "cosine", "cosine, l2 or dot")
	c.Flags().Uint64Var(&seed, "seed", 1, "seed of a generated dataset (use the same as spate run's)")
	return c
}

func newVectorDriftCmd() *cobra.Command {
	var target, model, apiKey, baseline string
	var maxDrift float64
	var every time.Duration
	var count int
	var update bool
	c := &cobra.Command{
		Use:   "drift --target URL --model M --baseline FILE",
		Short: "Embed fixed canary texts and report norm shift and cosine drift against a stored baseline",
		Long: `Embeds fixed canary texts through /v1/embeddings. The first time (or with
--update) it stores them as the baseline; later it compares: per canary the
norm shift (‖now‖/‖baseline‖ − 1) and the cosine drift (1 − cos). With --every
it repeats the comparison at that interval, --count times.
Exit code 3 when the largest cosine drift exceeds --max-drift.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if target == "" || model == "" || baseline == "" {
				return usageErr("--target, --model and --baseline are required")
			}
			if apiKey == "" {
				apiKey = os.Getenv("OPENAI_API_KEY")
			}
			e := &vector.Embedder{BaseURL: target, Model: model, APIKey: apiKey}
			out := cmd.OutOrStdout()
			base, err := vector.ReadBaseline(baseline)
			if update || errors.Is(err, fs.ErrNotExist) {
				vecs, err := e.Embed(cmd.Context(), vector.DefaultCanaries)
				if err != nil {
					return err
				}
				b := &vector.Baseline{Model: model, Target: openai.Redact(target), TakenAt: time.Now().UTC()}
				for i, t := range vector.DefaultCanaries {
					b.Canaries = append(b.Canaries, vector.Canary{Text: t, Vector: vecs[i]})
				}
				if err := b.Write(baseline); err != nil {
					return err
				}
				fmt.Fprintf(out, "baseline of %d canaries (%d dimensions) written to %s\n", len(vecs), len(vecs[0]), baseline)
				return nil
			}
			if err != nil {
				return err
			}
			texts := make([]string, len(base.Canaries))
			for i, c := range base.Canaries {
				texts[i] = c.Text
			}
			var worst float64
			for n := 0; n < max(count, 1); n++ {
				if n > 0 {
					select {
					case <-time.After(every):
					case <-cmd.Context().Done():
						return cmd.Context().Err()
					}
				}
				vecs, err := e.Embed(cmd.Context(), texts)
				if err != nil {
					return err
				}
				d, err := vector.CompareDrift(base, vecs, time.Now().UTC())
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "%s against the baseline of %s (%s)\n", d.TakenAt.Format(time.RFC3339), base.TakenAt.Format(time.RFC3339), base.Model)
				if err := vector.WriteDrift(out, d); err != nil {
					return err
				}
				worst = max(worst, d.MaxCosineDrift)
			}
			if worst > maxDrift {
				fmt.Fprintf(out, "FAIL: max cosine drift %.6f > --max-drift %g\n", worst, maxDrift)
				return &exitErr{code: exitThreshold, err: fmt.Errorf("embedding drift %.6f over %g", worst, maxDrift)}
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&target, "target", "", "API base URL, e.g. http://127.0.0.1:8000/v1")
	fl.StringVar(&model, "model", "", "embedding model")
	fl.StringVar(&apiKey, "api-key", "", "API key (default $OPENAI_API_KEY); never written anywhere")
	fl.StringVar(&baseline, "baseline", "", "baseline file: written when missing (or with --update), compared with otherwise")
	fl.BoolVar(&update, "update", false, "write a new baseline instead of comparing")
	fl.Float64Var(&maxDrift, "max-drift", 0.01, "largest acceptable cosine drift (1 − cos) of any canary")
	fl.DurationVar(&every, "every", time.Minute, "interval between comparisons when --count > 1")
	fl.IntVar(&count, "count", 1, "how many comparisons to make")
	return c
}
