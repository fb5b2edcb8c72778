// Package logbuild is spate workload build: a workload made from a log of
// real queries. It reads the log (querylog), embeds the queries (textembed:
// a local hashed TF-IDF, or an API's /v1/embeddings), clusters them
// (cluster: over-clustering by k-means++, groups merged by average
// linkage, k at the largest linkage gap), after learning the log's
// boilerplate (greetings, sign-offs, stock phrases) and setting noise
// aside; keeps representatives of each cluster and writes them as a spate
// dataset labelled by cluster, with a summary beside it.
//
// It belongs to the workload stage of the data flow: it makes the dataset
// a run's workload then reads.
package logbuild

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/spate-dev/spate/internal/client/openai"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/internal/workload"
	"github.com/spate-dev/spate/internal/workload/logbuild/cluster"
	"github.com/spate-dev/spate/internal/workload/logbuild/querylog"
	"github.com/spate-dev/spate/internal/workload/logbuild/textembed"
)

// Options are the settings of a build.
type Options struct {
	// Log is the log file, or "-" for In.
	Log string
	In  io.Reader
	// Out is the workload to write (JSONL dataset); Summary the cluster
	// summary (default: Out's name with .summary.json).
	Out, Summary string
	// Read says how to read the log (format, JSONL field, CSV column).
	Read querylog.Options
	// Cluster says how to cluster (k, 0 for auto, samples, seed, ...).
	Cluster cluster.Options
	// Weights shares the workload's lines by cluster size instead of
	// Samples per cluster.
	Weights bool
	// Local is the local embedding, used unless Target is set.
	Local textembed.Local
	// Target, Model, APIKey and Batch embed through an OpenAI-compatible
	// API instead (Model: the first the server lists, when empty).
	Target, Model, APIKey string
	Batch                 int
	// Mutate, when set, rewrites each line's query with a mutate spec
	// (workload.ParseMutation), seeded by Cluster.Seed and the line,
	// keeping the original in the line's vars.original and the kinds
	// applied in its labels.mutation.
	Mutate string
}

// ErrUsage marks options a build cannot run with (test with errors.Is).
var ErrUsage = errors.New("workload build usage")

type usageError struct{ msg string }

func (e usageError) Error() string        { return e.msg }
func (e usageError) Is(target error) bool { return target == ErrUsage }

// Check reports options a build cannot run with, naming their flags of
// spate workload build; the errors are ErrUsage.
func (o Options) Check() error {
	bad := func(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }
	if o.Out == "" {
		return bad("spate workload build needs -o FILE, the workload to write")
	}
	c := o.Cluster
	for _, p := range []struct {
		name string
		v    int
	}{{"--k-max", c.KMax}, {"--samples", c.Samples}, {"--batch", o.Batch}, {"--dim", o.Local.Dim}, {"--silhouette-sample", c.SilhouetteSample}, {"--restarts", c.Restarts}} {
		if p.v < 1 {
			return bad("%s %d: want at least 1", p.name, p.v)
		}
	}
	switch {
	case c.K < 0:
		return bad("--k %d: want a number of clusters ≥ 1 or auto", c.K)
	case c.MinSize < 0:
		return bad("--min-cluster-size %d: want 0 (automatic) or more", c.MinSize)
	case c.K == 0 && c.KMax < 2:
		return bad("--k-max %d: want at least 2 with --k auto", c.KMax)
	case o.Read.Field != "" && o.Read.Column != "":
		return bad("--field (JSONL) and --column (CSV) exclude each other")
	case o.Target == "" && (o.Model != "" || o.APIKey != ""):
		return bad("--model and --api-key choose the remote embedding: give --target too")
	}
	if o.Mutate != "" {
		if _, err := workload.ParseMutation(o.Mutate); err != nil {
			return bad("--mutate: %v", err)
		}
	}
	return nil
}

// Build makes the workload: it prints the embedding's progress to log and
// the cluster table to out.
func Build(ctx context.Context, o Options, out, log io.Writer) error {
	if err := o.Check(); err != nil {
		return err
	}
	summaryPath := o.Summary
	if summaryPath == "" {
		summaryPath = strings.TrimSuffix(o.Out, filepath.Ext(o.Out)) + ".summary.json"
	}
	name := o.Log
	o.Read.Context = ctx
	var qs []querylog.Query
	var err error
	if name == "-" {
		name = "stdin"
		qs, err = querylog.Read(o.In, name, o.Read)
	} else {
		qs, err = querylog.ReadFile(name, o.Read)
	}
	if err != nil {
		return err
	}
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Text
	}
	var emb textembed.Embedder = o.Local
	if o.Target != "" {
		model := o.Model
		if model == "" {
			oc, err := openai.New(openai.Config{BaseURL: o.Target, API: openai.Embeddings, APIKey: o.APIKey})
			if err != nil {
				return usageError{fmt.Sprintf("--target: %v", err)}
			}
			ids, err := oc.Models(ctx)
			if err != nil {
				return fmt.Errorf("choosing an embedding model (set --model): %w", err)
			}
			if len(ids) == 0 {
				return fmt.Errorf("the target %s lists no models: set --model", scrub.URL(o.Target))
			}
			model = ids[0]
		}
		emb = textembed.Remote{BaseURL: o.Target, Model: model, APIKey: o.APIKey, Batch: o.Batch}
	}
	fmt.Fprintf(log, "embedding %d queries from %s with %s\n", len(texts), name, emb.Name())
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		return err
	}
	// The local model labels the clusters and, unless told to keep it,
	// learns the log's boilerplate: queries that are nothing else go to the
	// unclustered bucket whatever the embedding.
	model := o.Local.Fit(texts)
	res, err := cluster.Build(ctx, texts, vecs, model, o.Cluster)
	if err != nil {
		return fmt.Errorf("clustering %s: %w", name, err)
	}
	lines := cluster.Lines(res, o.Weights, o.Cluster.Seed)
	if o.Mutate != "" {
		m, _ := workload.ParseMutation(o.Mutate) // checked
		n := mutateLines(lines, m, o.Cluster.Seed)
		fmt.Fprintf(log, "mutated %d of %d queries (%s)\n", n, len(lines), m)
	}
	if err := writeFile(o.Out, func(w io.Writer) error { return cluster.WriteLines(w, lines) }); err != nil {
		return err
	}
	sum := cluster.Summarize(res, texts, model.Boilerplate(), lines, name, emb.Name(), o.Out, o.Weights, o.Cluster.Seed)
	if err := writeFile(summaryPath, func(w io.Writer) error { return sum.WriteJSON(w) }); err != nil {
		return err
	}
	if err := sum.WriteTable(out); err != nil {
		return err
	}
	fmt.Fprintf(out, "workload written to %s (%d lines), summary to %s\n", o.Out, len(lines), summaryPath)
	return nil
}

// mutateLines rewrites each line's prompt with m, seeded by seed and the
// line's index, keeping the original in vars.original and the kinds in
// labels.mutation; it returns how many lines changed.
func mutateLines(lines []cluster.Line, m workload.Mutation, seed uint64) int {
	changed := 0
	for i := range lines {
		l := &lines[i]
		out, kinds := m.Apply(l.Prompt, rand.New(rand.NewPCG(seed^0x3D7A11, uint64(i))))
		label := "none"
		if len(kinds) > 0 {
			if l.Vars == nil {
				l.Vars = map[string]string{}
			}
			l.Vars["original"], l.Prompt, label = l.Prompt, out, strings.Join(kinds, "+")
			changed++
		}
		l.Labels["mutation"] = label
	}
	return changed
}

// writeFile creates path and writes it with write.
func writeFile(path string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
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
