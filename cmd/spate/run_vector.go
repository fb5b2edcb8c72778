package main

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/spate-dev/spate/internal/client/vector"
	"github.com/spate-dev/spate/internal/client/workflow"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/result"
)

func init() {
	runExtensions = append(runExtensions, func() runExtension { return &vectorExt{} })
}

// vectorExt makes spate run drive a vector database (--vector) with
// recall@k measured beside latency, optionally sweeping ef_search over
// stages (--ef-search), or run a multi-step workflow (--workflow) (issue 10).
type vectorExt struct {
	target, dataset, metric, truthDir string
	k                                 int
	efs                               []int
	load                              bool
	workflowFile                      string

	idx      vector.Index
	probe    *vector.Probe
	wf       *workflow.Workflow
	placeTgt bool // --target was set by this extension
}

func (x *vectorExt) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&x.target, "vector", "", "drive a vector database instead: pgvector://user:pass@host:port/db?table=T, chroma://host:port/collection or qdrant://host:port/collection")
	fs.StringVar(&x.dataset, "vector-dataset", "gen:2000,64,20,100", "with --vector: JSONL file of {\"vector\": [...]} and {\"query\": [...]} lines, or gen:N,DIM,CLUSTERS,QUERIES for generated clusters (seeded by --seed)")
	fs.StringVar(&x.metric, "vector-metric", "cosine", "with --vector: distance of the index and the ground truth: cosine, l2 or dot")
	fs.IntVar(&x.k, "vector-k", 10, "with --vector: neighbours asked for (recall@k)")
	fs.IntSliceVar(&x.efs, "ef-search", nil, "with --vector: search breadths to sweep, one stage each (e.g. 10,40,100; -1: exact search), giving the recall-vs-QPS frontier")
	fs.BoolVar(&x.load, "vector-load", true, "with --vector: load the dataset into the database first (replaces the table or collection)")
	fs.StringVar(&x.truthDir, "vector-truth-cache", "", "with --vector: directory caching exact top-k ground truth (default: the user cache dir, spate/truth)")
	fs.StringVar(&x.workflowFile, "workflow", "", "run this multi-step workflow (YAML) for every request: per-step timing and failures")
}

func (x *vectorExt) before(_ *cobra.Command, f *runFlags) (func(), error) {
	if x.target == "" && x.workflowFile == "" {
		if len(x.efs) > 0 {
			return nil, usageErr("--ef-search needs --vector")
		}
		return nil, nil
	}
	if x.target != "" && x.workflowFile != "" {
		return nil, usageErr("--vector and --workflow are exclusive: a workflow calls its search service itself")
	}
	if x.target != "" {
		if x.k <= 0 {
			return nil, usageErr("--vector-k %d: want a positive number of neighbours", x.k)
		}
		if _, err := vector.ParseMetric(x.metric); err != nil {
			return nil, usageErr("--vector-metric: %v", err)
		}
		for _, ef := range x.efs {
			if ef < vector.Exact || ef == 0 {
				return nil, usageErr("--ef-search %d: want positive breadths, or -1 for an exact search", ef)
			}
		}
	}
	if x.target != "" {
		// No LLM API is asked anything (no model lookup): the vector
		// database is the target.
		f.api = "http"
	}
	if f.target == "" {
		// The plan wants a target; the vector database or the workflow's
		// URLs are the real ones.
		f.target, f.api, x.placeTgt = "http://127.0.0.1:1", "http", true
	}
	return func() {
		if x.idx != nil {
			_ = x.idx.Close()
		}
	}, nil
}

// parseGen reads gen:N,DIM,CLUSTERS,QUERIES.
func parseGen(s string, seed uint64) (vector.GenConfig, error) {
	parts := strings.Split(strings.TrimPrefix(s, "gen:"), ",")
	if len(parts) != 4 {
		return vector.GenConfig{}, fmt.Errorf("%q: want gen:N,DIM,CLUSTERS,QUERIES, e.g. gen:2000,64,20,100", s)
	}
	var n [4]int
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v <= 0 {
			return vector.GenConfig{}, fmt.Errorf("%q: %q is not a positive integer", s, p)
		}
		n[i] = v
	}
	return vector.GenConfig{N: n[0], Dim: n[1], Clusters: n[2], Queries: n[3], Spread: 0.1, Seed: seed}, nil
}

// loadDataset reads or generates the --vector-dataset.
func loadDataset(spec string, seed uint64) (*vector.Dataset, error) {
	if strings.HasPrefix(spec, "gen:") {
		cfg, err := parseGen(spec, seed)
		if err != nil {
			return nil, usageErr("--vector-dataset %v", err)
		}
		return vector.Generate(cfg)
	}
	return vector.ReadFile(spec)
}

func truthDir(dir string) string {
	if dir != "" {
		return dir
	}
	if c, err := os.UserCacheDir(); err == nil {
		return filepath.Join(c, "spate", "truth")
	}
	return filepath.Join("spate-results", "truth")
}

func (x *vectorExt) after(cmd *cobra.Command, f *runFlags, p *runner.Plan) error {
	switch {
	case x.target != "":
		return x.afterVector(cmd, f, p)
	case x.workflowFile != "":
		return x.afterWorkflow(f, p)
	}
	return nil
}

func (x *vectorExt) afterVector(cmd *cobra.Command, f *runFlags, p *runner.Plan) error {
	ctx := cmd.Context()
	m, _ := vector.ParseMetric(x.metric)
	ds, err := loadDataset(x.dataset, f.seed)
	if err != nil {
		return err
	}
	idx, err := vector.Open(ctx, x.target)
	if err != nil {
		return fmt.Errorf("--vector: %w", err)
	}
	x.idx = idx
	if x.load {
		if !f.quiet {
			fmt.Fprintf(cmd.ErrOrStderr(), "loading %d vectors of %d dimensions into %s (%s)\n", len(ds.Vectors), ds.Dim, idx.Backend(), vector.Redact(x.target))
		}
		if err := idx.Load(ctx, ds, m); err != nil {
			return fmt.Errorf("--vector: %w", err)
		}
	} else if pg, ok := idx.(*vector.Pgvector); ok {
		pg.UseMetric(m)
	}
	if x.k > len(ds.Vectors) {
		return usageErr("--vector-k %d: the dataset has %d vectors", x.k, len(ds.Vectors))
	}
	truth, err := vector.CachedTruth(truthDir(x.truthDir), ds, m, x.k)
	if err != nil {
		return err
	}
	probe, err := vector.NewProbe(idx, ds, truth, x.k)
	if err != nil {
		return err
	}
	x.probe = probe
	obs := &vector.Observer{Backend: idx.Backend(), Metric: m, K: x.k, Ef: map[string]int{}, Probe: probe}
	p.Client = probe
	p.Source = probe.Source(0, f.seed)
	efs := x.efs
	if len(efs) == 0 {
		efs = []int{0}
	}
	var stages []runner.Stage
	for _, st := range p.Stages {
		for _, ef := range efs {
			s := st
			if len(x.efs) > 0 {
				s.Name = efName(ef)
				if len(p.Stages) > 1 {
					s.Name = st.Name + "/" + efName(ef)
				}
			}
			s.Source = probe.Source(ef, f.seed)
			obs.Ef[s.Name] = ef
			stages = append(stages, s)
		}
	}
	p.Stages = stages
	p.Observers = append(p.Observers, obs)
	p.Provenance.Target, p.Provenance.API, p.Provenance.Model = vector.Redact(x.target), "vector", idx.Backend()
	p.Config.Dataset = x.dataset
	p.Config.InputTokens, p.Config.OutputTokens = "", ""
	return nil
}

func efName(ef int) string {
	if ef == vector.Exact {
		return "exact"
	}
	return "ef-" + strconv.Itoa(ef)
}

func (x *vectorExt) afterWorkflow(f *runFlags, p *runner.Plan) error {
	spec, err := workflow.ReadFile(x.workflowFile)
	if err != nil {
		return usageErr("--workflow: %v", err)
	}
	vars := map[string]any{"target": strings.TrimRight(f.target, "/"), "model": f.model}
	if x.placeTgt {
		vars["target"] = ""
	}
	h := http.Header{}
	if f.apiKey != "" {
		h.Set("Authorization", "Bearer "+f.apiKey)
	}
	host := ""
	if u, err := url.Parse(f.target); err == nil && !x.placeTgt {
		host = u.Host
	}
	wf, err := workflow.New(spec, workflow.Config{Vars: vars, Headers: h, HeadersHost: host, Seed: f.seed})
	if err != nil {
		return usageErr("--workflow %s: %v", x.workflowFile, err)
	}
	x.wf = wf
	p.Client = wf
	p.Observers = append(p.Observers, workflow.NewObserver(wf))
	p.Provenance.API = "workflow"
	if x.placeTgt {
		p.Provenance.Target = ""
	}
	return nil
}

func (x *vectorExt) finish(cmd *cobra.Command, f *runFlags, res *result.Result, _ string) error {
	if f.quiet || f.noSummary {
		return nil
	}
	out := cmd.OutOrStdout()
	if x.probe != nil {
		fmt.Fprintln(out)
		if err := vector.WriteFrontier(out, res.Scenarios); err != nil {
			return err
		}
	}
	if x.wf != nil {
		fmt.Fprintln(out)
		if err := workflow.WriteSteps(out, res.Scenarios); err != nil {
			return err
		}
	}
	return nil
}
