package plan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spate-dev/spate/experiment"
	"github.com/spate-dev/spate/internal/capread"
	"github.com/spate-dev/spate/internal/client/vector"
	"github.com/spate-dev/spate/internal/client/workflow"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/internal/scrub"
	"github.com/spate-dev/spate/result"
)

func vectorDefaults() experiment.Vector {
	return experiment.Vector{Dataset: "gen:2000,64,20,100", Metric: "cosine", K: 10, Load: new(true)}
}

// vectorFeature drives a vector database (experiment section vector) with
// recall@k measured beside latency, sweeping ef_search over stages, or
// runs a multi-step workflow (experiment field workflow) for every request.
type vectorFeature struct {
	idx      vector.Index
	probe    *vector.Probe
	wf       *workflow.Workflow
	placeTgt bool // the target was set by this feature
}

func (f *vectorFeature) check(_ context.Context, x *experiment.Experiment) error {
	v := x.Vector
	for _, s := range x.Stages {
		switch {
		case s.TopK < 0:
			return invalidf("stage %s: topK %d: want a positive number of neighbours", s.Name, s.TopK)
		case s.TopK > 0 && v.URL == "":
			return invalidf("stage %s: topK is the neighbours a vector search asks for: give vector.url (--vector)", s.Name)
		}
	}
	if v.Proxy && v.URL == "" {
		return invalidf("--vector-proxy puts the chaos proxy in front of --vector: give --vector")
	}
	if v.Proxy {
		if _, _, err := vector.ProxyUpstream(v.URL); err != nil {
			return invalidf("--vector-proxy: %v", err)
		}
	}
	if v.URL == "" && x.Workflow == "" {
		if len(v.EfSearch) > 0 {
			return invalidf("--ef-search needs --vector")
		}
		return nil
	}
	if v.URL != "" && x.Workflow != "" {
		return invalidf("--vector and --workflow are exclusive: a workflow calls its search service itself")
	}
	if v.URL != "" {
		if v.K <= 0 {
			return invalidf("--vector-k %d: want a positive number of neighbours", v.K)
		}
		if _, err := vector.ParseMetric(v.Metric); err != nil {
			return invalidf("--vector-metric: %v", err)
		}
		for _, ef := range v.EfSearch {
			if ef < vector.Exact || ef == 0 {
				return invalidf("--ef-search %d: want positive breadths, or -1 for an exact search", ef)
			}
		}
	}
	return nil
}

func (f *vectorFeature) start(_ context.Context, r *Run) error {
	x := r.X
	if x.Vector.URL == "" && x.Workflow == "" {
		return nil
	}
	if x.Vector.URL != "" {
		// No LLM API is asked anything (no model lookup): the vector
		// database is the target.
		x.Target.API = "http"
	}
	if x.Target.URL == "" {
		// The plan wants a target; the vector database or the workflow's
		// URLs are the real ones.
		x.Target.URL, x.Target.API, f.placeTgt = placeholderTarget, "http", true
	}
	r.onClose(func() {
		if f.idx != nil {
			_ = f.idx.Close()
		}
	})
	return nil
}

// placeholderTarget stands for the target of a run whose requests go
// elsewhere (a vector database, a workflow's URLs); nothing is sent to it.
const placeholderTarget = "http://127.0.0.1:1"

func (f *vectorFeature) apply(ctx context.Context, r *Run) error {
	switch {
	case r.X.Vector.URL != "":
		return f.applyVector(ctx, r)
	case r.X.Workflow != "":
		return f.applyWorkflow(ctx, r)
	}
	return nil
}

func (f *vectorFeature) applyVector(ctx context.Context, r *Run) error {
	v, p := r.X.Vector, &r.Plan
	m, _ := vector.ParseMetric(v.Metric) // checked
	ds, err := vector.LoadDataset(ctx, v.Dataset, r.seed(), workloadLimits(r.X.Limits))
	if err != nil {
		if errors.Is(err, vector.ErrGenSpec) {
			return invalidf("--vector-dataset %v", err)
		}
		return err
	}
	idx, err := vector.Open(ctx, v.URL)
	if err != nil {
		return fmt.Errorf("--vector: %w", err)
	}
	f.idx = idx
	if *v.Load {
		if !r.quiet() {
			fmt.Fprintf(r.stderr(), "loading %d vectors of %d dimensions into %s (%s)\n", len(ds.Vectors), ds.Dim, idx.Backend(), scrub.URL(v.URL))
		}
		if err := idx.Load(ctx, ds, m); err != nil {
			return fmt.Errorf("--vector: %w", err)
		}
	} else if pg, ok := idx.(*vector.Pgvector); ok {
		pg.UseMetric(m)
	}
	// The ground truth covers the largest k any stage asks for.
	maxK := v.K
	for _, s := range r.X.Stages {
		maxK = max(maxK, s.TopK)
	}
	if maxK > len(ds.Vectors) {
		return invalidf("--vector-k %d (or a stage's topK): the dataset has %d vectors", maxK, len(ds.Vectors))
	}
	truth, err := vector.CachedTruth(ctx, vector.TruthDir(v.TruthCache), ds, m, maxK)
	if err != nil {
		return err
	}
	probe, err := vector.NewProbe(idx, ds, truth, v.K)
	if err != nil {
		return err
	}
	f.probe = probe
	obs := &vector.Observer{Backend: idx.Backend(), Metric: m, K: v.K, Ef: map[string]int{}, Ks: map[string]int{}, Probe: probe}
	p.Client = probe
	p.Source = probe.Source(0, r.seed())
	efs := v.EfSearch
	if len(efs) == 0 {
		efs = []int{0}
	}
	var stages []runner.Stage
	for i, st := range p.Stages {
		k := v.K
		if tk := r.X.Stages[i].TopK; tk > 0 {
			k = tk
		}
		for _, ef := range efs {
			s := st
			if len(v.EfSearch) > 0 {
				s.Name = efName(ef)
				if len(p.Stages) > 1 {
					s.Name = st.Name + "/" + efName(ef)
				}
			}
			s.Source = probe.SourceK(ef, k, r.seed())
			obs.Ef[s.Name] = ef
			obs.Ks[s.Name] = k
			stages = append(stages, s)
		}
	}
	p.Stages = stages
	p.Observers = append(p.Observers, obs)
	p.Provenance.Target, p.Provenance.API, p.Provenance.Model = scrub.URL(v.URL), "vector", idx.Backend()
	if r.vectorUpstream != "" {
		p.Provenance.Target = scrub.URL(r.vectorUpstream) // the database, not the proxy before it
	}
	p.Config.Dataset = v.Dataset
	p.Config.InputTokens, p.Config.OutputTokens = "", ""
	return nil
}

func efName(ef int) string {
	if ef == vector.Exact {
		return "exact"
	}
	return "ef-" + strconv.Itoa(ef)
}

func (f *vectorFeature) applyWorkflow(ctx context.Context, r *Run) error {
	x, p := r.X, &r.Plan
	// One read: the bytes parsed are the bytes fingerprinted (another
	// workflow file sends other requests, so its bytes enter the workload
	// digest).
	b, err := capread.ReadFile(ctx, x.Workflow, capread.SettingsLimit, "")
	if err != nil {
		return invalidf("--workflow: reading workflow: %v", err)
	}
	spec, err := workflow.Parse(b)
	if err != nil {
		return invalidf("--workflow: reading workflow %s: %v", x.Workflow, err)
	}
	vars := map[string]any{"target": strings.TrimRight(x.Target.URL, "/"), "model": x.Target.Model}
	if f.placeTgt {
		vars["target"] = ""
	}
	h := http.Header{}
	if x.Target.APIKey != "" {
		h.Set("Authorization", "Bearer "+x.Target.APIKey)
	}
	host := ""
	if u, err := url.Parse(x.Target.URL); err == nil && !f.placeTgt {
		host = u.Host
	}
	wf, err := workflow.New(spec, workflow.Config{Vars: vars, Headers: h, HeadersHost: host, Seed: r.seed(), TraceHeader: *x.Target.TraceHeader})
	if err != nil {
		return invalidf("--workflow %s: %v", x.Workflow, err)
	}
	f.wf = wf
	p.Client = wf
	sum := sha256.Sum256(b)
	p.Defines = append(p.Defines, "workflow="+hex.EncodeToString(sum[:]))
	p.Observers = append(p.Observers, workflow.NewObserver(wf))
	p.Provenance.API = "workflow"
	if f.placeTgt {
		p.Provenance.Target = ""
	}
	return nil
}

func (f *vectorFeature) finish(r *Run, res *result.Result) error {
	if !r.summary() {
		return nil
	}
	out := r.stdout()
	if f.probe != nil {
		fmt.Fprintln(out)
		if err := vector.WriteFrontier(out, res.Scenarios); err != nil {
			return err
		}
		fmt.Fprintln(out)
		if err := vector.WriteJoint(out, res.Scenarios); err != nil {
			return err
		}
	}
	if f.wf != nil {
		fmt.Fprintln(out)
		if err := workflow.WriteSteps(out, res.Scenarios); err != nil {
			return err
		}
	}
	return nil
}
