package vector

import (
	"context"
	"fmt"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/result"
)

// Observer gathers, per stage, the recall of every measured query beside
// its latency, and fills the stage's scenario's Vector section.
type Observer struct {
	Backend string
	Metric  Metric
	K       int
	// Ef is the search breadth of each stage, by stage name.
	Ef map[string]int
	// Ks is the k of each stage whose top_k is not K, by stage name.
	Ks map[string]int
	// Probe, when set, is prepared for each stage's ef as the stage
	// starts (see EfPreparer); a failure is kept in the stage's warnings.
	Probe *Probe

	mu     sync.Mutex
	stages map[string]*stageAgg
}

var _ runner.Observer = (*Observer)(nil)

type stageAgg struct {
	mu      sync.Mutex
	recalls []float64 // in order of completion
	lats    []float64 // the same queries' latencies, ms
	hits    []bool    // and whether each found the nearest neighbour
	lat     *hdr.Histogram
	queries int
	failed  int
	prepErr error
	prep    time.Duration
	// first and last are the earliest send and latest end of the
	// measured queries.
	first, last time.Time
}

func (o *Observer) agg(stage string) *stageAgg {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stages == nil {
		o.stages = map[string]*stageAgg{}
	}
	a := o.stages[stage]
	if a == nil {
		a = &stageAgg{lat: hdr.New(1, int64(time.Hour/time.Microsecond), 3)}
		o.stages[stage] = a
	}
	return a
}

// StageStart implements runner.Observer.
func (o *Observer) StageStart(ctx context.Context, st runner.Stage, start time.Time) {
	a := o.agg(st.Name)
	if o.Probe != nil {
		t0 := time.Now()
		err := o.Probe.Prepare(ctx, o.Ef[st.Name])
		a.mu.Lock()
		a.prepErr, a.prep = err, time.Since(t0)
		a.mu.Unlock()
	}
}

// Sent implements runner.Observer.
func (o *Observer) Sent(stage string, at, intended time.Time, warmup bool) {}

// Record implements runner.Observer: it keeps the recall and latency of
// every measured query.
func (o *Observer) Record(stage string, rec *record.Record) {
	if rec.Warmup || rec.Err == record.Cancelled {
		return
	}
	a := o.agg(stage)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.queries++
	if a.first.IsZero() || rec.Sent.Before(a.first) {
		a.first = rec.Sent
	}
	if rec.End.After(a.last) {
		a.last = rec.End
	}
	if rec.Failed() || rec.Recall < 0 {
		a.failed++
		return
	}
	a.recalls = append(a.recalls, rec.Recall)
	a.lats = append(a.lats, float64(rec.E2E())/float64(time.Millisecond))
	a.hits = append(a.hits, rec.NNHit)
	_ = a.lat.RecordValue(max(rec.E2E().Microseconds(), 1))
}

// StageEnd implements runner.Observer.
func (o *Observer) StageEnd(st runner.Stage, sc *result.Scenario) {
	a := o.agg(st.Name)
	a.mu.Lock()
	defer a.mu.Unlock()
	k := o.K
	if sk, ok := o.Ks[st.Name]; ok {
		k = sk
	}
	v := &result.Vector{
		Backend: o.Backend, Metric: string(o.Metric), K: k, EfSearch: o.Ef[st.Name],
		Queries: a.queries, Failed: a.failed,
		LatencyMS: metrics.Summarize(a.lat, 1000),
	}
	if span := a.last.Sub(a.first).Seconds(); span > 0 {
		v.QueriesPerS = float64(len(a.recalls)) / span
	}
	v.Recall, v.Warnings = SummarizeRecall(a.recalls)
	if len(a.hits) > 0 {
		n := 0
		for _, h := range a.hits {
			if h {
				n++
			}
		}
		v.HitRate = float64(n) / float64(len(a.hits))
	}
	var jw []string
	v.ByLatency, v.ByRecall, jw = Joint(a.lats, a.recalls, a.hits)
	v.Warnings = append(v.Warnings, jw...)
	if o.Probe != nil && len(a.recalls) > len(o.Probe.Data.Queries) {
		v.Warnings = append(v.Warnings, fmt.Sprintf("the %d queries were each asked about %.0f times: the recall interval is over this run's searches of that fixed set, not over other queries", len(o.Probe.Data.Queries), float64(len(a.recalls))/float64(len(o.Probe.Data.Queries))))
	}
	if a.prep > time.Second {
		v.Warnings = append(v.Warnings, fmt.Sprintf("preparing the index for ef_search %d took %.1f s at the stage's start (the stage's own rates include it; queries_per_s does not)", v.EfSearch, a.prep.Seconds()))
	}
	if a.prepErr != nil {
		v.Warnings = append(v.Warnings, "preparing the index: "+a.prepErr.Error())
	}
	sc.Vector = v
}
