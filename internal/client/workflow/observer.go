package workflow

import (
	"context"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spate-dev/spate/internal/metrics"
	"github.com/spate-dev/spate/internal/record"
	"github.com/spate-dev/spate/internal/runner"
	"github.com/spate-dev/spate/result"
)

// Observer gathers each stage's per-step figures into its scenario's
// Workflow section.
type Observer struct {
	name  string
	steps []string
	mu    sync.Mutex
	agg   map[string]*stageAgg
}

var _ runner.Observer = (*Observer)(nil)

// NewObserver returns an observer of w's steps.
func NewObserver(w *Workflow) *Observer {
	return &Observer{name: w.spec.Name, steps: w.StepNames(), agg: map[string]*stageAgg{}}
}

type stageAgg struct {
	mu               sync.Mutex
	runs, ok, failed int
	failedAt         map[string]int
	steps            []stepAgg
	e2e              *hdr.Histogram
}

type stepAgg struct {
	runs, failed int
	errors       map[string]int
	lat          *hdr.Histogram
	ttft, itl    *hdr.Histogram // streamed runs only
	streamed     int
	tokens       int64
}

func newHist() *hdr.Histogram { return hdr.New(1, int64(time.Hour/time.Microsecond), 3) }

func (o *Observer) stage(name string) *stageAgg {
	o.mu.Lock()
	defer o.mu.Unlock()
	a := o.agg[name]
	if a == nil {
		a = &stageAgg{failedAt: map[string]int{}, steps: make([]stepAgg, len(o.steps)), e2e: newHist()}
		for i := range a.steps {
			a.steps[i] = stepAgg{errors: map[string]int{}, lat: newHist(), ttft: newHist(), itl: newHist()}
		}
		o.agg[name] = a
	}
	return a
}

// StageStart implements runner.Observer.
func (o *Observer) StageStart(ctx context.Context, st runner.Stage, start time.Time) {
	o.stage(st.Name)
}

// Sent implements runner.Observer.
func (o *Observer) Sent(stage string, at, intended time.Time, warmup bool) {}

// Record implements runner.Observer.
func (o *Observer) Record(stage string, rec *record.Record) {
	if rec.Warmup || rec.Err == record.Cancelled {
		return
	}
	a := o.stage(stage)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.runs++
	for i, s := range rec.Steps {
		if i >= len(a.steps) {
			break
		}
		sa := &a.steps[i]
		sa.runs++
		if s.Err != record.OK {
			sa.failed++
			sa.errors[string(s.Err)]++
			continue
		}
		_ = sa.lat.RecordValue(max(s.End.Sub(s.Start).Microseconds(), 1))
		if !s.FirstToken.IsZero() {
			sa.streamed++
			sa.tokens += int64(s.Tokens)
			_ = sa.ttft.RecordValue(max(s.FirstToken.Sub(s.Start).Microseconds(), 1))
			for _, g := range s.Gaps {
				_ = sa.itl.RecordValue(max(g.Microseconds(), 1))
			}
		}
	}
	if rec.Failed() {
		a.failed++
		at := "(none)"
		if n := len(rec.Steps); n > 0 && rec.Steps[n-1].Err != record.OK {
			at = rec.Steps[n-1].Name
		}
		a.failedAt[at]++
		return
	}
	a.ok++
	if n := len(rec.Steps); n > 0 {
		_ = a.e2e.RecordValue(max(rec.Steps[n-1].End.Sub(rec.Steps[0].Start).Microseconds(), 1))
	}
}

// StageEnd implements runner.Observer.
func (o *Observer) StageEnd(st runner.Stage, sc *result.Scenario) {
	a := o.stage(st.Name)
	a.mu.Lock()
	defer a.mu.Unlock()
	w := &result.Workflow{Name: o.name, Runs: a.runs, Succeeded: a.ok, Failed: a.failed, E2EMS: metrics.Summarize(a.e2e, 1000)}
	if len(a.failedAt) > 0 {
		w.FailedAt = map[string]int{}
		for k, v := range a.failedAt {
			w.FailedAt[k] = v
		}
	}
	for i, name := range o.steps {
		sa := &a.steps[i]
		ws := result.WorkflowStep{Name: name, Runs: sa.runs, Failed: sa.failed, LatencyMS: metrics.Summarize(sa.lat, 1000)}
		if sa.streamed > 0 {
			ttft, itl := metrics.Summarize(sa.ttft, 1000), metrics.Summarize(sa.itl, 1000)
			ws.TTFTMS, ws.ITLMS, ws.OutputTokens = &ttft, &itl, sa.tokens
		}
		if len(sa.errors) > 0 {
			ws.Errors = map[string]int{}
			for k, v := range sa.errors {
				ws.Errors[k] = v
			}
		}
		w.Steps = append(w.Steps, ws)
	}
	sc.Workflow = w
}
